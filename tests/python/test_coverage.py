"""Operator coverage (issue 3, SPEC 3.1): every aten operator that standard models run, in inference and in a
training step, has a formula or an ignore reason, so the operator total is complete; on every operator that
FlopCounterMode counts (matmuls, convolutions, fused attention) our count is its count.

The zoo (zoo.py): ResNet with BatchNorm, MobileNetV2/V3 and EfficientNet blocks (depthwise
convolutions, ReLU6, Hardswish, SiLU, squeeze-excite), ConvNeXt (channels-last LayerNorm, GELU), a ViT, a UNet
(ConvTranspose, bilinear and nearest Upsample, cat), LSTM and GRU text models with Embedding, and Hugging Face
BERT, GPT-2, Llama, T5 and Whisper from tiny configs with SDPA and eager attention.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from torchscan import crawl_module, measure_flops

import zoo
from conftest import assert_flopcounter_parity, flopcounter_counts

HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models: intra-op threads only add spin-waits (and make timings erratic on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _param(name: str, *rest: str):
    hf = "-" in name  # the Hugging Face workloads are "<model>-<attention>"
    marks = [pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")] if hf else []
    return pytest.param(name, *rest, id="-".join((name, *rest)), marks=marks)


def assert_complete(report) -> None:
    json.dumps(report, allow_nan=False)
    assert report["diagnostics"] == [], [(d["operator"], d["message"]) for d in report["diagnostics"]]
    total = report["total"]
    assert total["status"] == "complete"
    assert total["value"] == sum(report["by_operator"].values())


def measure_both(make_workload) -> tuple[dict, dict[str, int]]:
    """Our report and FlopCounterMode's counts, each on a fresh copy of the same state."""
    ours = measure_flops(make_workload())
    theirs = flopcounter_counts(make_workload())
    return ours, theirs


# ---------------------------------------------------------------------------------------------------------------
# Inference: eval, no_grad
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [_param(n) for n in zoo.WORKLOADS])
def test_inference_is_complete_and_matches_flopcounter(name):
    report, theirs = measure_both(lambda: zoo.inference(zoo.fresh(name)))
    assert_complete(report)
    assert_flopcounter_parity(report, theirs)


# ---------------------------------------------------------------------------------------------------------------
# One training step: forward, loss, backward, optimizer.step(), zero_grad()
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "optimizer"), [_param(n, opt) for n in zoo.WORKLOADS for opt in ("sgd", "adamw")]
)
def test_training_step_is_complete_and_matches_flopcounter(name, optimizer):
    report, theirs = measure_both(lambda: zoo.training_step(zoo.fresh(name), optimizer))
    assert_complete(report)
    assert_flopcounter_parity(report, theirs)
    # the step ran backward and the optimizer: gradient and update operators were counted
    assert "aten.convolution_backward" in report["by_operator"] or "aten.mm" in report["by_operator"]


# The multi-tensor and fused optimizer kernels (the GPU defaults) on models with the most diverse parameters.
@pytest.mark.parametrize(
    ("name", "optimizer"),
    [
        _param(n, opt)
        for n in ("resnet", "lstm", "llama-sdpa")
        for opt in ("sgd-foreach", "sgd-fused", "adamw-foreach", "adamw-fused")
    ],
)
def test_training_step_with_foreach_and_fused_optimizers_is_complete(name, optimizer):
    report, theirs = measure_both(lambda: zoo.training_step(zoo.fresh(name), optimizer))
    assert_complete(report)
    assert_flopcounter_parity(report, theirs)


def _optimizer_step_flops(optimizer: str, steps_before: int) -> dict:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)  # 12 + 3 = 15 parameter elements in 2 tensors
    opt = zoo.OPTIMIZERS[optimizer](model.parameters())
    x = torch.rand(2, 4)
    for _ in range(steps_before):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
    model(x).sum().backward()
    report = measure_flops(opt.step)
    assert_complete(report)
    return report


# Per parameter element (for-loop arithmetic of torch.optim, SGD lr=0.01, momentum=0.9, weight_decay=1e-4):
#   grad.add(param, alpha=wd) 2 + buf.mul_(0.9) 1 + buf.add_(grad, alpha=1) 1 + param.add_(buf, alpha=-lr) 2 = 6
#   -> 6 * 15 = 90; the first step copies grad into the buffer instead of mul/add: 4 * 15 = 60.
# AdamW (lr=1e-3, betas 0.9/0.999, wd=0.01) per element: param.mul_(1 - lr*wd) 1, exp_avg.lerp_ 3,
#   exp_avg_sq.mul_ 1 + addcmul_(value=0.001) 3, sqrt 1 + div 1 + add eps 1, param.addcdiv_(value=-step) 3 = 14
#   -> 14 * 15 = 210, plus one add per parameter tensor for the step counters: 212.
@pytest.mark.parametrize(
    ("family", "steps_before", "expected"),
    [("sgd", 1, 90), ("sgd", 0, 60), ("adamw", 1, 212), ("adamw", 0, 212)],
)
def test_optimizer_implementations_count_the_same(family, steps_before, expected):
    totals = {}
    for impl in (family, f"{family}-foreach", f"{family}-fused"):
        report = _optimizer_step_flops(impl, steps_before)
        totals[impl] = report["total"]["value"]
    assert totals == dict.fromkeys(totals, expected)


def test_gradient_clipping_is_complete():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    model(torch.rand(2, 4)).sum().backward()
    for foreach in (False, True):
        report = measure_flops(lambda: nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach))
        assert_complete(report)
        assert report["total"]["value"] > 0


# Beyond the zoo: other standard layers, losses and torch.optim optimizers in one training step each.
def _ring_models():
    x, seq = torch.randn(2, 4, 8, 8), torch.randn(2, 5, 8)
    soft = torch.softmax(torch.randn(2, 5, 3), -1)
    targets = {"prob": torch.rand(2, 5, 3), "class": torch.zeros(10, dtype=torch.long)}
    cnn = nn.Sequential(
        nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.ELU(), nn.Conv2d(8, 4, 1), nn.InstanceNorm2d(4, affine=True),
        nn.LeakyReLU(), nn.Softplus(), nn.PReLU(), nn.Mish(), nn.LogSigmoid(), nn.SELU(), nn.CELU(), nn.Softsign(),
        nn.Tanhshrink(), nn.AdaptiveAvgPool2d(3), nn.AdaptiveMaxPool2d(2), nn.Flatten(),
    )  # fmt: skip

    def losses(o):
        return (
            F.binary_cross_entropy_with_logits(o, targets["prob"], pos_weight=torch.ones(3))
            + F.binary_cross_entropy(torch.sigmoid(o), targets["prob"])
            + F.smooth_l1_loss(o, targets["prob"]) + F.l1_loss(o, targets["prob"]) + F.huber_loss(o, targets["prob"])
            + F.kl_div(F.log_softmax(o, -1), soft, reduction="batchmean")
            + F.cross_entropy(o.reshape(-1, 3), targets["class"], label_smoothing=0.1)
        )  # fmt: skip

    misc = nn.Sequential(
        nn.Linear(8, 8), nn.Dropout(0.1), nn.RMSNorm(8), nn.GLU(), nn.Linear(4, 8), nn.Softmax(-1), nn.Hardshrink(),
        nn.Softshrink(), nn.Threshold(0.1, 0.0), nn.Hardtanh(), nn.GELU("tanh"),
    )  # fmt: skip
    return {
        "cnn": (cnn, x, lambda o: o.sum()),
        "losses": (nn.Linear(8, 3), seq, losses),
        "reductions": (misc, seq, lambda o: (o.var(-1) + o.std(-1) + o.logsumexp(-1) + o.amax(-1)).sum()),
        "embedding_bag": (nn.EmbeddingBag(10, 4, mode="mean"), torch.randint(0, 10, (3, 4)), lambda o: o.sum()),
    }


RING_OPTIMIZERS = {
    "rmsprop": lambda p, f: torch.optim.RMSprop(p, momentum=0.9, centered=True, foreach=f),
    "adagrad": lambda p, f: torch.optim.Adagrad(p, foreach=f),
    "adam-amsgrad": lambda p, f: torch.optim.Adam(p, amsgrad=True, weight_decay=0.1, foreach=f),
    "nadam": lambda p, f: torch.optim.NAdam(p, foreach=f),
    "radam": lambda p, f: torch.optim.RAdam(p, foreach=f),
    "adamax": lambda p, f: torch.optim.Adamax(p, foreach=f),
    "adadelta": lambda p, f: torch.optim.Adadelta(p, foreach=f),
    "sgd-nesterov": lambda p, f: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, foreach=f),
}


@pytest.mark.parametrize("model_name", ["cnn", "losses", "reductions", "embedding_bag"])
@pytest.mark.parametrize("optimizer", list(RING_OPTIMIZERS))
def test_more_layers_losses_and_optimizers_are_complete(model_name, optimizer):
    torch.manual_seed(0)
    model, inputs, loss = _ring_models()[model_name]
    for foreach in (False, True):
        opt = RING_OPTIMIZERS[optimizer](model.parameters(), foreach)

        def step():
            loss(model(inputs)).backward()
            opt.step()
            opt.zero_grad()

        step()  # optimizer state exists: a steady-state step
        report, theirs = measure_both(lambda: step)
        assert_complete(report)
        if theirs:
            assert_flopcounter_parity(report, theirs)
        with torch.no_grad():
            assert_complete(measure_flops(lambda: model.eval()(inputs)))
        model.train()


# ---------------------------------------------------------------------------------------------------------------
# No allocation: the same counts with the model built on the meta device and meta inputs
# ---------------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def meta_kernels():
    """Makes the CPU run pick the kernels that PyTorch picks for meta tensors, where it chooses by device:
    SDPA's math path (the CPU flash kernel is CPU-only), no nn.TransformerEncoder fast path, no oneDNN LSTM."""
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with warnings.catch_warnings():
            # mkldnn.flags() warns about TF32 on Intel GPUs, which CPU runs do not use
            warnings.simplefilter("ignore", UserWarning)
            with sdpa_kernel([SDPBackend.MATH]), torch.backends.mkldnn.flags(enabled=False):
                yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)


# nn.LSTM/nn.GRU on CPU project the first layer's (T, B, I) input for all steps at once with matmul + add,
# counted as mm plus an explicit bias add; on meta they run step by step with addmm, whose bias add
# FlopCounterMode's formula (and so ours) leaves out. Same matmul FLOPs; the meta total lacks the T*B*G*H
# bias adds (T=6 steps, B=2, G gates, H=16): LSTM 6*2*4*16 = 768, bidirectional GRU 2 directions * 6*2*3*16 = 1152.
RNN_FOLDED_BIAS = {"lstm": 768, "gru": 1152}


def _without_rnn_folding(counts: dict[str, int]) -> dict[str, int]:
    rest = {k: v for k, v in counts.items() if k not in ("aten.mm", "aten.addmm", "aten.add")}
    rest["matmul"] = counts.get("aten.mm", 0) + counts.get("aten.addmm", 0)
    return rest


@pytest.mark.parametrize("name", [_param(n) for n in zoo.WORKLOADS])
def test_meta_device_inference_gives_the_cpu_counts(name):
    with meta_kernels():
        cpu = measure_flops(zoo.inference(zoo.fresh(name, masks=False)))
    assert_complete(cpu)
    meta_case = zoo.meta_case(name)
    assert all(p.is_meta for p in meta_case.model.parameters())
    meta = measure_flops(zoo.inference(meta_case))
    assert_complete(meta)
    if name in RNN_FOLDED_BIAS:
        assert _without_rnn_folding(meta["by_operator"]) == _without_rnn_folding(cpu["by_operator"])
        added = cpu["by_operator"]["aten.add"] - meta["by_operator"]["aten.add"]
        assert added == RNN_FOLDED_BIAS[name]
        assert cpu["total"]["value"] - meta["total"]["value"] == added
    else:
        assert meta["by_operator"] == cpu["by_operator"]
        assert meta["total"] == cpu["total"]
    crawl = crawl_module(meta_case.model, args=meta_case.args, kwargs=meta_case.kwargs)
    assert crawl["operator_flops"]["by_operator"] == meta["by_operator"]
    assert crawl["operator_flops"]["total"]["status"] == "complete"
    rows = [layer["metrics"]["operator_flops"] for layer in crawl["layers"]]
    assert all(row["status"] == "complete" for row in rows)
    assert sum(row["value"] for row in rows) == meta["total"]["value"]


def test_meta_device_default_kernels_on_cpu_differ_only_by_kernel_choice():
    """Without pinning, CPU runs the fused kernels and the meta run the composite ones; both are complete.
    The fused encoder layer counts what its other path counts: the same total."""
    fused = {"vit": "aten._transformer_encoder_layer_fwd"}
    if torch.backends.mkldnn.is_available():  # oneDNN builds run nn.LSTM as mkldnn_rnn_layer on CPU
        fused["lstm"] = "aten.mkldnn_rnn_layer"
    for name, kernel in fused.items():
        cpu = measure_flops(zoo.inference(zoo.fresh(name)))
        meta = measure_flops(zoo.inference(zoo.meta_case(name)))
        assert_complete(cpu)
        assert_complete(meta)
        assert kernel in cpu["by_operator"] and kernel not in meta["by_operator"]
        if name == "vit":
            assert cpu["total"] == meta["total"]


@pytest.mark.parametrize("name", [_param(n) for n in zoo.WORKLOADS if n not in RNN_FOLDED_BIAS])
def test_meta_device_inference_gives_the_cpu_total_without_pinning_kernels(name):
    """Whichever kernels the CPU picks (the SDPA flash kernel, the encoder fast path), the same total as on
    meta; SDPA calls are listed the same (aten.scaled_dot_product_attention) on both devices."""
    cpu = measure_flops(zoo.inference(zoo.fresh(name, masks=False)))
    meta = measure_flops(zoo.inference(zoo.meta_case(name)))
    assert_complete(cpu)
    assert_complete(meta)
    assert cpu["total"] == meta["total"]
    if name != "vit":  # the encoder's fused kernel is one operator on CPU
        assert cpu["by_operator"] == meta["by_operator"]


# ---------------------------------------------------------------------------------------------------------------
# Unknown operators stay visible; caller formulas override ours for one call
# ---------------------------------------------------------------------------------------------------------------


@torch.library.custom_op("torchscan_coverage::scale", mutates_args=())
def _scale(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5


@_scale.register_fake
def _(x):
    return torch.empty_like(x)


class ResNetWithCustomOp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = zoo.fresh("resnet").model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.torchscan_coverage.scale(self.body(x))


def test_custom_library_operator_in_a_covered_model_is_uncounted():
    model = ResNetWithCustomOp().eval()
    x = zoo.prototype("resnet").args[0]
    with torch.no_grad():
        report = measure_flops(lambda: model(x))
        plain = measure_flops(lambda: model.body(x))
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == plain["total"]["value"]  # everything else is counted
    (diag,) = report["diagnostics"]
    assert diag["code"] == "uncounted_operator" and diag["operator"] == "torchscan_coverage.scale"
    mapped = measure_flops(
        lambda: model(x), custom_mapping={torch.ops.torchscan_coverage.scale: lambda x, out_shape=None: x.numel()}
    )
    assert_complete(mapped)
    assert mapped["total"]["value"] == plain["total"]["value"] + 2 * 10  # one multiply per logit


def test_custom_mapping_overrides_an_extension_formula_for_one_call():
    step = zoo.training_step(zoo.fresh("resnet"), "sgd")
    ours = measure_flops(step)["by_operator"]
    calls = []

    def formula(grad_shape, self_shape, threshold, out_shape=None):
        calls.append(tuple(grad_shape))
        return 7

    overridden = measure_flops(step, custom_mapping={torch.ops.aten.threshold_backward: formula})
    assert_complete(overridden)
    assert overridden["by_operator"]["aten.threshold_backward"] == 7 * len(calls) > 0
    assert {k: v for k, v in overridden["by_operator"].items() if k != "aten.threshold_backward"} == {
        k: v for k, v in ours.items() if k != "aten.threshold_backward"
    }
    assert measure_flops(step)["by_operator"] == ours  # scoped to that call


def test_summary_custom_mapping_is_scoped_and_validated(capsys):
    from torchscan import summary

    case = zoo.fresh("mobilenet_v2")
    with pytest.raises(TypeError, match="operator packets"):
        summary(case.model, args=case.args, custom_mapping={torch.ops.aten.hardtanh_.default: lambda *a, **k: 0})
    report = summary(case.model, args=case.args, custom_mapping={torch.ops.aten.hardtanh_: lambda *a, **k: 0})
    assert report["operator_flops"]["by_operator"]["aten.hardtanh_"] == 0
    assert report["operator_flops"]["total"]["status"] == "complete"
    plain = crawl_module(case.model, args=case.args)
    assert plain["operator_flops"]["by_operator"]["aten.hardtanh_"] > 0
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------------------------
# docs/operator-flops.md is generated from the C table
# ---------------------------------------------------------------------------------------------------------------


def test_operator_docs_are_generated_from_the_table():
    import ctypes
    from pathlib import Path

    from torchscan import _engine

    engine = ctypes.CDLL(_engine.__file__)
    try:
        generate = engine.ts_op_docs_markdown
    except AttributeError:
        pytest.skip("the extension does not export the engine's symbols; test_op_formulas checks the docs")
    generate.restype = ctypes.c_void_p
    pointer = generate()
    assert pointer
    try:
        text = ctypes.string_at(pointer).decode()
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(pointer))
    doc = Path(__file__).resolve().parents[2] / "docs" / "operator-flops.md"
    assert doc.read_text() == text, "regenerate with build-c/torchscan-op-docs > docs/operator-flops.md"
    # every operator the coverage workloads needed is documented
    for op in ("aten.native_batch_norm_backward", "aten._fused_adamw_", "aten.mkldnn_rnn_layer", "aten.embedding"):
        assert f"`{op}`" in text
