"""The documented examples E1-E7 (reference/EXAMPLES.md), typed as a user would."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from conftest import UnsupportedLeaf, assert_nothing_left


# ---------------------------------------------------------------------------------------------------------------
# E1. Quickstart table and report
# ---------------------------------------------------------------------------------------------------------------


def _e1_lines(out: str) -> list[str]:
    return out.splitlines()


def test_e1_summary_prints_the_pinned_table(capsys):
    from torchscan import summary

    model = nn.Conv2d(3, 8, 3)
    report = summary(model, (3, 32, 32))
    lines = _e1_lines(capsys.readouterr().out)

    # Column widths (contract 5.1): max(header, content):
    #   Layer: max(5, len("conv2d")=6) = 6; Type: max(4, len("Conv2d")=6) = 6;
    #   Output Shape: max(12, len("(1, 8, 30, 30)")=14) = 14; Param #: max(7, len("224")=3) = 7;
    #   Trainable: max(9, len("True")=4) = 9.  Separators: 4 spaces.
    widths = [6, 6, 14, 7, 9]
    line_length = sum(widths) + 4 * (len(widths) - 1)  # 42 + 16 = 58
    header = "    ".join(h.ljust(w) for h, w in zip(["Layer", "Type", "Output Shape", "Param #", "Trainable"], widths))
    row = "    ".join(c.ljust(w) for c, w in zip(["conv2d", "Conv2d", "(1, 8, 30, 30)", "224", "True"], widths))

    stripped = [line.rstrip() for line in lines]
    assert header.rstrip() in stripped
    assert row.rstrip() in stripped
    assert stripped.index(row.rstrip()) == stripped.index(header.rstrip()) + 2  # header, "=" rule, row
    assert "_" * line_length in lines
    assert "=" * line_length in lines
    # footer, in this order
    footer = [
        "Trainable params: 224",  # 8*3*3*3 weights + 8 biases = 216 + 8
        "Non-trainable params: 0",
        "Total params: 224",
        "Model size (params + buffers): 0.00 Mb",  # 224*4 bytes = 896 B = 0.00085 MiB
        "Module-formula forward FLOPs: 388.80 kFLOPs",  # 7200 outputs * (2*3*9 - 1 + 1) = 388,800
        "Multiply-Accumulations: 194.40 kMACs",  # 7200 * 27
        "Direct memory accesses: 201.82 kDMAs",  # 27*7200 + 224 + 7200 = 201,824
        "Operator forward FLOPs: 388.80 kFLOPs",  # aten.convolution 2*1*8*3*9*900
    ]
    positions = [stripped.index(text) for text in footer]
    assert positions == sorted(positions)
    assert not any(line.startswith("Diagnostics:") for line in stripped)
    # the model-size and compute groups are separated by "-" rules
    assert stripped[positions[3] - 1] == "-" * line_length
    assert stripped[positions[4] - 1] == "-" * line_length
    assert isinstance(report, dict) and report["schema_version"] == 1


def test_e1_crawl_module_returns_the_same_report_without_printing(capsys):
    from torchscan import crawl_module, summary

    model = nn.Conv2d(3, 8, 3)
    printed = summary(model, (3, 32, 32))
    capsys.readouterr()
    report = crawl_module(model, (3, 32, 32), strict=True)
    assert capsys.readouterr().out == ""
    assert report == printed

    totals = report["totals"]
    assert totals["parameters"]["value"] == 224
    assert totals["module_flops"] == {
        "status": "complete",
        "value": 388_800,
        "known_value": 388_800,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "torchscan_module_formula",
    }
    assert totals["macs"]["value"] == 194_400
    assert totals["dmas"]["value"] == 201_824
    (layer,) = report["layers"]
    assert layer["output"]["shape"] == [1, 8, 30, 30]
    assert report["diagnostics"] == []


# ---------------------------------------------------------------------------------------------------------------
# E2. Real calls with kwargs, metadata only
# ---------------------------------------------------------------------------------------------------------------


class MaskedModel(nn.Module):
    def forward(self, input_ids, *, attention_mask):
        return input_ids * attention_mask


def test_e2_kwargs_metadata():
    from torchscan import crawl_module

    model = MaskedModel()
    input_ids = torch.ones(1, 4)
    attention_mask = torch.tensor([[True, True, False, False]])
    report = crawl_module(model, args=(input_ids,), kwargs={"attention_mask": attention_mask})
    assert report["inputs"]["kwargs"]["attention_mask"] == {
        "kind": "tensor",
        "shape": [1, 4],
        "dtype": "torch.bool",
        "device": "cpu",
        "requires_grad": False,
    }
    assert report["inputs"]["source"] == "provided"
    assert report["inputs"]["args"] == [
        {"kind": "tensor", "shape": [1, 4], "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    ]
    json.dumps(report, allow_nan=False)


# ---------------------------------------------------------------------------------------------------------------
# E3. Operator FLOPs of arbitrary code
# ---------------------------------------------------------------------------------------------------------------


def test_e3_measure_flops_sin():
    from torchscan import measure_flops

    inputs = torch.ones(8)
    flops = measure_flops(lambda: torch.sin(inputs))
    # our table documents aten.sin as 1 FLOP per output element (contract 2.2): 8 elements -> 8, complete
    assert flops["total"] == {
        "status": "complete",
        "value": 8,
        "known_value": 8,
        "unit": "FLOPs",
        "scope": "workload",
        "method": "torchscan_dispatch_counter",
    }
    assert flops["by_operator"] == {"aten.sin": 8}
    assert flops["diagnostics"] == []
    assert flops["schema_version"] == 1
    assert flops["context"]["method"] == "torchscan_dispatch_counter"
    assert flops["context"]["counting_convention"] == "torchscan_flops_v1"
    assert flops["context"]["torch_version"] == torch.__version__


# ---------------------------------------------------------------------------------------------------------------
# E4. Peak memory of a workload
# ---------------------------------------------------------------------------------------------------------------


def test_e4_peak_memory_cpu():
    from torchscan.process import measure_peak_memory

    inputs = torch.ones(8)
    memory = measure_peak_memory(lambda: torch.cos(inputs), device=inputs.device)
    assert memory["device"] == "cpu"
    assert memory["metric"] == "pytorch_tensor_bytes"
    for key in ("baseline_bytes", "peak_bytes", "delta_bytes"):
        assert type(memory[key]) is int
    # documented deviation: the CPU baseline is 0 (peak of tensors allocated during the call)
    assert memory["baseline_bytes"] == 0
    assert memory["delta_bytes"] == memory["peak_bytes"] - memory["baseline_bytes"]
    # the cos output alone is 8 float32 = 32 bytes
    assert memory["peak_bytes"] >= 32
    json.dumps(memory, allow_nan=False)


# ---------------------------------------------------------------------------------------------------------------
# E5. Before/after comparison
# ---------------------------------------------------------------------------------------------------------------


def test_e5_compare_parameters_delta():
    from torchscan import compare_reports, crawl_module

    before = crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32))
    after = crawl_module(nn.Conv2d(3, 12, 3), (3, 32, 32))
    diff = compare_reports(before, after)
    # 12*27 + 12 = 336 ; 8*27 + 8 = 224 ; 336 - 224 = 112
    assert diff["totals"]["parameters"]["status"] == "complete"
    assert diff["totals"]["parameters"]["delta"] == 112
    json.dumps(diff, allow_nan=False)


# ---------------------------------------------------------------------------------------------------------------
# E6. Strict automation
# ---------------------------------------------------------------------------------------------------------------


class ScaledModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.custom = UnsupportedLeaf()

    def forward(self, x, *, scale=1.0):
        return self.custom(self.proj(x)) * scale


def test_e6_strict_raises_incomplete_analysis_error():
    from torchscan import IncompleteAnalysisError, crawl_module

    model = ScaledModel()
    inputs = torch.rand(1, 4)
    model_kwargs = {"scale": 0.5}
    try:
        crawl_module(model, args=(inputs,), kwargs=model_kwargs, strict=True)
    except IncompleteAnalysisError as error:
        caught = error
    else:  # pragma: no cover - this is the failure
        pytest.fail("strict=True did not raise on an unsupported leaf module")

    assert isinstance(caught, RuntimeError)
    report = caught.report
    assert report["schema_version"] == 1
    assert [layer["path"] for layer in report["layers"]] == ["", "proj", "custom"]
    # Incomplete totals: module_flops, macs, dmas (partial, the leaf has no formula). Diagnostic metrics: the same
    # three plus one receptive-field diagnostic. Sorted and comma separated:
    assert str(caught) == "Analysis is incomplete for: dmas, macs, module_flops, receptive_field."
    # the same call without strict gives the same report
    assert crawl_module(model, args=(inputs,), kwargs=model_kwargs) == report
    assert_nothing_left(model)
    assert model.training is True


# ---------------------------------------------------------------------------------------------------------------
# E7. Inference and training-step peak memory
# ---------------------------------------------------------------------------------------------------------------


def test_e7_inference_and_training_peak_memory():
    from torchscan.process import measure_peak_memory

    model = torch.nn.Linear(64, 16)
    inputs = torch.randn(32, 64)

    def run_inference():
        with torch.inference_mode():
            return model(inputs)

    inference = measure_peak_memory(run_inference, device=inputs.device)
    assert type(inference["peak_bytes"]) is int
    assert inference["peak_bytes"] >= 32 * 16 * 4  # the (32, 16) float32 output

    targets = torch.randn(32, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    before = [p.detach().clone() for p in model.parameters()]

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()

    training = measure_peak_memory(train_step, device=inputs.device)
    assert type(training["peak_bytes"]) is int
    # the gradient w.r.t. the output (32*16*4 = 2048 B) is alive while the weight gradient (16*64*4 = 4096 B)
    # is computed from it
    assert training["peak_bytes"] >= 32 * 16 * 4 + 16 * 64 * 4
    assert training["device"] == "cpu" and training["metric"] == "pytorch_tensor_bytes"
    # the workload ran exactly once: one SGD step changed the weights
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    json.dumps(training, allow_nan=False)
