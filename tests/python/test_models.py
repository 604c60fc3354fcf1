"""Real models: ResNet- and MobileNet-style CNNs, Hugging Face BERT and GPT-2 from tiny configs."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from torchscan import crawl_module, measure_flops

from conftest import assert_flopcounter_parity, assert_nothing_left, flopcounter_counts, json_roundtrip, training_flags


# ---------------------------------------------------------------------------------------------------------------
# Model definitions
# ---------------------------------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)  # called twice per block
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
        self.layer2 = nn.Sequential(BasicBlock(8, 16, 2))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),  # depthwise
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, cout, 1, bias=False),  # pointwise projection
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class TinyMobileNet(nn.Module):
    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(inplace=True)),
            InvertedResidual(8, 8, 1, 4),
            InvertedResidual(8, 12, 2, 6),
            InvertedResidual(12, 12, 1, 6),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(12, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def _eval_counts(model: nn.Module, *args, **kwargs) -> dict[str, int]:
    """FlopCounterMode on the same model and inputs, in eval mode under no_grad (as the crawl runs)."""
    flags = training_flags(model)
    model.eval()
    with torch.no_grad():
        counts = flopcounter_counts(lambda: model(*args, **kwargs))
    for name, m in model.named_modules():
        m.training = flags[name]
    return counts


def _check_common(model: nn.Module, report: dict, flags: dict) -> None:
    assert training_flags(model) == flags
    assert_nothing_left(model)
    assert json_roundtrip(report) == report
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    assert report["totals"]["buffer_elements"]["value"] == sum(b.numel() for b in model.buffers())
    assert report["totals"]["parameter_bytes"]["value"] == sum(p.numel() * p.element_size() for p in model.parameters())


def _conv_formula(module: nn.Conv2d, out_shape: list[int]) -> int:
    """Contract 2.1: O * (2 * (Cin/groups) * prod(k) - 1 + [bias])."""
    out = math.prod(out_shape)
    per_output = 2 * (module.in_channels // module.groups) * math.prod(module.kernel_size) - 1
    return out * (per_output + (module.bias is not None))


# ---------------------------------------------------------------------------------------------------------------
# CNNs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [TinyResNet, TinyMobileNet], ids=["resnet", "mobilenet"])
def test_cnn_crawl(factory):
    torch.manual_seed(0)
    model = factory()
    model.train()
    model.fc.eval() if hasattr(model, "fc") else model.classifier[0].eval()
    flags = training_flags(model)
    x = torch.rand(2, 3, 32, 32)
    report = crawl_module(model, args=(x,))
    _check_common(model, report, flags)

    # every operator FlopCounterMode counts has our exact count
    theirs = _eval_counts(model, x)
    assert_flopcounter_parity(report["operator_flops"], theirs)
    assert report["operator_flops"]["total"]["value"] == sum(report["operator_flops"]["by_operator"].values())

    # module formulas: every leaf here is a standard family, so all are complete
    assert report["diagnostics"] == []
    assert report["totals"]["module_flops"]["status"] == "complete"
    assert report["totals"]["operator_flops"]["status"] == "complete"
    modules = dict(model.named_modules())
    convs = 0
    for layer in report["layers"]:
        module = modules[layer["path"]]
        if isinstance(module, nn.Conv2d):
            convs += 1
            metric = layer["metrics"]["module_flops"]
            assert metric["status"] == "complete"
            assert metric["value"] == _conv_formula(module, layer["output"]["shape"]), layer["path"]
    assert convs == sum(isinstance(m, nn.Conv2d) for m in model.modules())


def test_resnet_structure():
    model = TinyResNet()
    report = crawl_module(model, (3, 32, 32))
    keys = [(layer["path"], layer["call_index"]) for layer in report["layers"]]
    for expected in [
        ("", 0),
        ("conv1", 0),
        ("layer1.0.conv1", 0),
        ("layer1.0.relu", 0),
        ("layer1.0.relu", 1),  # the block's ReLU instance is called twice
        ("layer2.0.downsample", 0),
        ("layer2.0.downsample.0", 0),
        ("layer2.0.downsample.1", 0),
        ("avgpool", 0),
        ("fc", 0),
    ]:
        assert expected in keys, expected
    assert ("layer1.0.relu", 2) not in keys
    assert len(keys) == len(set(keys))
    rows = dict(((layer["path"], layer["call_index"]), layer) for layer in report["layers"])
    assert rows[("layer2.0.downsample.0", 0)]["output"]["shape"] == [1, 16, 8, 8]  # 32 -> maxpool 16 -> stride 2: 8
    assert rows[("fc", 0)]["output"]["shape"] == [1, 10]
    assert rows[("layer1.0.relu", 1)]["parameters"]["shared"] is False  # ReLU has no tensors to share
    assert rows[("layer1.0", 0)]["depth"] == 2 and rows[("layer1.0", 0)]["name"] == "0"
    assert rows[("layer1.0", 0)]["type"] == "BasicBlock"
    # attributed parameters over rows sum to the model total (every module is called once with its own tensors)
    attributed = sum(layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in report["layers"])
    assert attributed == sum(p.numel() for p in model.parameters())
    # hand check of the stem: Conv2d(3, 8, 3, padding 1, no bias) on 32x32 -> O = 8*32*32 = 8192, 2*27 - 1 = 53
    assert rows[("conv1", 0)]["metrics"]["module_flops"]["value"] == 8192 * 53
    assert rows[("conv1", 0)]["metrics"]["macs"]["value"] == 8192 * 27


def test_mobilenet_depthwise_counts():
    model = TinyMobileNet()
    x = torch.rand(1, 3, 32, 32)
    report = crawl_module(model, args=(x,))
    rows = {layer["path"]: layer for layer in report["layers"]}
    dw = rows["features.1.conv.3"]  # depthwise 3x3 on 32 channels at 16x16
    assert dw["output"]["shape"] == [1, 32, 16, 16]
    # O = 32*16*16 = 8192; per output 2*1*9 - 1 = 17 -> 139,264 ; MACs 8192 * 9 = 73,728
    assert dw["metrics"]["module_flops"]["value"] == 139_264
    assert dw["metrics"]["macs"]["value"] == 73_728
    # FlopCounterMode on the same depthwise conv: 2 * 1 * (32*1*9) * 256 = 147,456
    dw_module = model.features[1].conv[3]
    with torch.no_grad():
        inp = torch.rand(1, 32, 16, 16)
        assert measure_flops(lambda: dw_module(inp))["by_operator"] == {"aten.convolution": 147_456}
        assert flopcounter_counts(lambda: dw_module(inp)) == {"aten.convolution": 147_456}
    # ReLU6 rows: 2 FLOPs per element (clamp below and above)
    relu6 = rows["features.1.conv.2"]
    assert relu6["metrics"]["module_flops"]["value"] == 2 * 32 * 16 * 16


def test_cnn_on_meta_device_matches_cpu():
    torch.manual_seed(0)
    for factory in (TinyResNet, TinyMobileNet):
        cpu_model = factory()
        cpu = crawl_module(cpu_model, (3, 32, 32))
        meta_model = factory().to("meta")
        meta = crawl_module(meta_model, (3, 32, 32))
        assert meta["context"]["devices"] == ["meta"]
        assert meta["inputs"]["args"][0]["device"] == "meta"
        assert meta["operator_flops"]["by_operator"] == cpu["operator_flops"]["by_operator"]
        assert meta["operator_flops"]["total"] == cpu["operator_flops"]["total"]
        for name in ("parameters", "module_flops", "macs", "dmas"):
            assert meta["totals"][name] == cpu["totals"][name], name
        assert [(row["path"], row["output"].get("shape")) for row in meta["layers"]] == [
            (row["path"], row["output"].get("shape")) for row in cpu["layers"]
        ]
        assert_nothing_left(meta_model)


def test_cnn_training_step_parity():
    torch.manual_seed(0)
    model = TinyResNet()
    x = torch.rand(2, 3, 32, 32, requires_grad=True)
    target = torch.randint(0, 10, (2,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), target).backward()
        optimizer.step()

    mine = measure_flops(step)
    theirs = flopcounter_counts(step)
    assert_flopcounter_parity(mine, theirs)
    json.dumps(mine, allow_nan=False)


# ---------------------------------------------------------------------------------------------------------------
# Hugging Face transformers, random weights from tiny configs (no download)
# ---------------------------------------------------------------------------------------------------------------

try:
    import transformers
except ImportError:  # pragma: no cover - requirements-dev.txt installs it
    transformers = None

needs_transformers = pytest.mark.skipif(transformers is None, reason="transformers is not installed")


def _bert():
    config = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    return transformers.BertModel(config)


def _gpt2():
    config = transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=4, vocab_size=99, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2Model(config)


BERT_PATHS = [
    "",
    "embeddings",
    "embeddings.word_embeddings",
    "embeddings.LayerNorm",
    "encoder.layer.0.attention.self.query",
    "encoder.layer.0.attention.self.key",
    "encoder.layer.0.attention.self.value",
    "encoder.layer.0.intermediate.dense",
    "encoder.layer.1.output.dense",
    "encoder.layer.1.output.LayerNorm",
    "pooler.dense",
]
GPT2_PATHS = [
    "",
    "wte",
    "wpe",
    "h.0.ln_1",
    "h.0.attn.c_attn",
    "h.0.attn.c_proj",
    "h.1.mlp.c_fc",
    "h.1.mlp.c_proj",
    "ln_f",
]


@needs_transformers
@pytest.mark.parametrize(("factory", "paths"), [(_bert, BERT_PATHS), (_gpt2, GPT2_PATHS)], ids=["bert", "gpt2"])
def test_hf_transformer_crawl(factory, paths):
    torch.manual_seed(0)
    model = factory()
    model.train()
    flags = training_flags(model)
    input_ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0  # padding in the second sequence: the attention mask is really used
    report = crawl_module(model, args=(input_ids,), kwargs={"attention_mask": mask})
    _check_common(model, report, flags)

    layer_paths = {layer["path"] for layer in report["layers"]}
    for path in paths:
        assert path in layer_paths, path
    assert report["inputs"]["args"][0] == {
        "kind": "tensor",
        "shape": [2, 7],
        "dtype": "torch.int64",
        "device": "cpu",
        "requires_grad": False,
    }
    assert report["inputs"]["kwargs"]["attention_mask"]["shape"] == [2, 7]

    by_operator = report["operator_flops"]["by_operator"]
    theirs = _eval_counts(model, input_ids, attention_mask=mask)
    assert_flopcounter_parity(report["operator_flops"], theirs)
    assert "aten.addmm" in theirs

    # Each SDPA call by the attention convention (contract 2.2's CPU-kernel formula), whichever kernel ran,
    # per layer: B=2, H=4, T=S=7, D=8: rows = 56, scores = 392;
    # 2*392*16 + 392 + (5*392 - 2*56) + 392 (mask) = 15,176; two layers: 30,352
    assert by_operator.get("aten.scaled_dot_product_attention") == 30_352
    # the CPU kernel ran them: its two products, 2*392*16 per layer, are listed under its name
    matrix = report["operator_flops"]["matrix_product_flops"]
    assert matrix["aten._scaled_dot_product_flash_attention_for_cpu"] == 2 * 2 * 392 * 16

    # the module-formula totals never pretend: unknown leaves make them partial, never a silent zero
    module_flops = report["totals"]["module_flops"]
    assert module_flops["status"] in ("complete", "partial")
    if module_flops["status"] == "partial":
        assert any(d["code"] == "unsupported_module_metric" for d in report["diagnostics"])
    op_total = report["operator_flops"]["total"]
    assert op_total["known_value"] == sum(by_operator.values())
    if op_total["status"] == "partial":
        assert report["operator_flops"]["diagnostics"]


@needs_transformers
def test_bert_linear_rows_match_module_formula():
    torch.manual_seed(0)
    model = _bert()
    input_ids = torch.randint(0, 99, (1, 5))
    report = crawl_module(model, args=(input_ids,), kwargs={"attention_mask": torch.ones(1, 5, dtype=torch.long)})
    rows = {layer["path"]: layer for layer in report["layers"]}
    # query: Linear(32, 32) on (1, 5, 32): O = 160 outputs, 2*32 - 1 + 1 (bias) = 64 each -> 10,240
    assert rows["encoder.layer.0.attention.self.query"]["metrics"]["module_flops"]["value"] == 160 * 64
    # intermediate: Linear(32, 37): O = 5*37 = 185 -> 185 * 64 = 11,840
    assert rows["encoder.layer.0.intermediate.dense"]["metrics"]["module_flops"]["value"] == 185 * 64
    # output.dense: Linear(37, 32): O = 160, 2*37 - 1 + 1 = 74 -> 11,840
    assert rows["encoder.layer.0.output.dense"]["metrics"]["module_flops"]["value"] == 160 * 74
