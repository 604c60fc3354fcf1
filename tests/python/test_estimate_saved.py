"""estimate_memory's saved-for-backward activations (issue #19, item 3 joined to item 1): per layer call, joined by
(path, call_index), the same numbers as crawl_module(saved_activations=True) on the same model and inputs, on real
CPU tensors and on meta. Small models are checked by hand too (what each autograd node saves, in bytes)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import zoo
from torch import nn

import torchscan
from torchscan import crawl_module, estimate_memory

F32 = 4
METHOD = "torch.autograd.graph.saved_tensors_hooks"


def _estimated(report: dict[str, Any]) -> tuple[dict[tuple[str, int], int], int]:
    rows = {}
    for row in report["layers"]:
        metric = row["saved_activation_bytes"]
        assert (metric["status"], metric["unit"], metric["scope"], metric["method"]) == (
            "complete",
            "bytes",
            "module_call_self",
            METHOD,
        )
        rows[(row["path"], row["call_index"])] = metric["value"]
    total = report["totals"]["saved_activation_bytes"]
    assert (total["status"], total["unit"], total["scope"], total["method"]) == (
        "complete",
        "bytes",
        "workload",
        METHOD,
    )
    return rows, total["value"]


def _crawled(model: nn.Module, args: tuple, kwargs: dict) -> tuple[dict[tuple[str, int], int], int]:
    report = crawl_module(model, args=args, kwargs=kwargs, saved_activations=True)
    rows = {(r["path"], r["call_index"]): r["metrics"]["saved_activation_bytes"]["value"] for r in report["layers"]}
    return rows, report["totals"]["saved_activation_bytes"]["value"]


def _loss(out: Any) -> torch.Tensor:
    out = getattr(out, "logits", out)
    return out.float().sum()


def _estimate(model: nn.Module, args: tuple, kwargs: dict, attention: str = "as_run"):
    def step() -> None:
        _loss(model(*args, **kwargs)).backward()

    return _estimated(estimate_memory(step, modules=model, attention=attention))


def _mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def test_mlp_by_hand_and_as_crawled():
    torch.manual_seed(0)
    model, x = _mlp(), torch.rand(3, 4)
    rows, total = _estimate(model, (x,), {})
    # Linear(4, 8) saves its input (3x4), ReLU its output (3x8); Linear(8, 2) saves the ReLU output again
    # (counted once, in the ReLU's row); parameters are excluded
    expected = {("", 0): 0, ("0", 0): 3 * 4 * F32, ("1", 0): 3 * 8 * F32, ("2", 0): 0}
    assert rows == expected and total == 144
    assert (rows, total) == _crawled(model, (x,), {})
    # the same numbers on meta
    meta = _mlp().to("meta")
    assert _estimate(meta, (x.to("meta"),), {}) == (expected, 144)


def test_no_modules_no_saved_fields_and_no_grad_saves_nothing():
    model, x = _mlp(), torch.rand(3, 4)
    report = estimate_memory(lambda: model(x))
    assert "layers" not in report and "saved_activation_bytes" not in report["totals"]

    def inference() -> None:
        with torch.no_grad():
            model(x)

    rows, total = _estimated(estimate_memory(inference, modules=model))
    assert total == 0 and set(rows.values()) == {0}


def _cnn() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)
    ).train()


def test_cnn_with_batchnorm_in_training_mode():
    torch.manual_seed(0)
    model, x = _cnn(), torch.rand(2, 3, 8, 8)
    rows, total = _estimate(model, (x,), {})
    act = 2 * 4 * 6 * 6 * F32
    # conv: its input; batch norm: its input (the conv output) and the saved mean and invstd (4 floats each);
    # ReLU: its output; Flatten is a view of it (nothing new); Linear: that view's storage, already counted
    expected = {
        ("", 0): 0,
        ("0", 0): 2 * 3 * 8 * 8 * F32,
        ("1", 0): act + 2 * 4 * F32,
        ("2", 0): act,
        ("3", 0): 0,
        ("4", 0): 0,
    }
    assert rows == expected
    assert (rows, total) == _crawled(model, (x,), {})
    meta = _cnn().to("meta")
    assert _estimate(meta, (x.to("meta"),), {}) == (rows, total)


def _encoder() -> nn.TransformerEncoderLayer:
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)


def test_transformer_encoder_layer():
    model, x = _encoder().train(), torch.rand(2, 5, 16)
    rows, total = _estimate(model, (x,), {})
    assert total > 0 and sum(rows.values()) == total
    assert (rows, total) == _crawled(model, (x,), {})
    # on meta, nn.MultiheadAttention's SDPA runs its math path, which saves more than the fused CPU kernel real
    # tensors ran; attention="fused" does not reach the SDPA call inside multi_head_attention_forward (known gap):
    # every other row is the same
    meta = _encoder().to("meta").train()
    meta_rows, _ = _estimate(meta, (x.to("meta"),), {}, "fused")
    assert {k: v for k, v in meta_rows.items() if k != ("self_attn", 0)} == {
        k: v for k, v in rows.items() if k != ("self_attn", 0)
    }


def _no_dropout(model: nn.Module) -> nn.Module:
    """Dropout off (SDPA's fused CPU kernel refuses dropout; the math path it falls back to saves more)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model.train()


@pytest.mark.parametrize("name", ["vit", "gpt2-eager", "llama-eager", "gpt2-sdpa", "llama-sdpa"])
def test_zoo_models_match_the_crawl_on_cpu_and_meta(name):
    if name != "vit":
        pytest.importorskip("transformers")
    case = zoo.fresh(name, masks=False)
    model = _no_dropout(case.model)
    rows, total = _estimate(model, case.args, case.kwargs)
    assert sum(1 for value in rows.values() if value > 0) >= 4
    assert (rows, total) == _crawled(model, case.args, case.kwargs)
    # SDPA: the fused CPU kernel on real tensors, simulated on meta by attention="fused"
    if name == "llama-sdpa":
        return  # fused mode repeats the grouped K/V heads before the kernel: 1,024 B more per layer (known gap)
    meta = zoo.meta_case(name)
    attention = "fused" if name.endswith("sdpa") else "as_run"
    assert _estimate(_no_dropout(meta.model), meta.args, meta.kwargs, attention) == (rows, total)
