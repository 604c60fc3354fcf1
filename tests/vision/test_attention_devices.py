"""Attention counts the same on CPU and meta (issue #18, item 3) on torch 2.14: torchvision's ViT-B/16, whose
nn.MultiheadAttention takes its fused fast path on CPU (aten._native_multi_head_attention) and runs linear
projections and scaled_dot_product_attention's math decomposition on meta, and timm's ViT, which calls
F.scaled_dot_product_attention (the CPU flash kernel on CPU, the math path on meta)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

from torchscan import crawl_module, measure_flops

torchvision = pytest.importorskip("torchvision")


def _both(build: Callable[[], torch.nn.Module], shape: tuple[int, ...]) -> dict[str, Any]:
    reports = {}
    for device in ("cpu", "meta"):
        torch.manual_seed(0)
        with torch.device(device):
            model = build().eval()
        x = torch.randn(shape, device=device)
        with torch.no_grad():
            reports[device] = measure_flops(lambda: model(x))
        assert reports[device]["diagnostics"] == []
        assert reports[device]["total"]["status"] == "complete"
    return reports


def test_vit_b_16_counts_the_same_on_cpu_and_meta() -> None:
    reports = _both(torchvision.models.vit_b_16, (1, 3, 224, 224))
    cpu, meta = reports["cpu"], reports["meta"]
    # Before the attention convention covered every kernel: CPU 35,227,720,234, meta 35,240,712,778.
    assert cpu["total"]["value"] == meta["total"]["value"] == 35_231_493_178
    assert "aten._native_multi_head_attention" in cpu["by_operator"]
    # 12 layers of one attention each: B=1, H=12, L=197, D=64: rows 2,364, scores 465,708;
    # 2*scores*128 + 6*scores - 2*rows = 122,010,768 per layer
    assert meta["by_operator"]["aten.scaled_dot_product_attention"] == 12 * 122_010_768


def test_timm_vit_counts_the_same_on_cpu_and_meta() -> None:
    timm = pytest.importorskip("timm")
    reports = _both(lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False), (2, 3, 224, 224))
    cpu, meta = reports["cpu"], reports["meta"]
    assert cpu["by_operator"] == meta["by_operator"]
    assert cpu["total"] == meta["total"]
    # 12 layers, B=2, H=3, L=197, D=64
    rows, scores = 2 * 3 * 197, 2 * 3 * 197 * 197
    assert cpu["by_operator"]["aten.scaled_dot_product_attention"] == 12 * (2 * scores * 128 + 6 * scores - 2 * rows)
    assert set(cpu["matrix_product_flops"]) >= {"aten._scaled_dot_product_flash_attention_for_cpu"}
    assert "aten._scaled_dot_product_flash_attention_for_cpu" not in meta["matrix_product_flops"]


def _module_totals(name: str, batch: int) -> dict[str, dict[str, Any]]:
    timm = pytest.importorskip("timm")
    totals = {}
    for device in ("cpu", "meta"):
        torch.manual_seed(0)
        with torch.device(device):
            model = timm.create_model(name, pretrained=False).eval()
        report = crawl_module(model, args=(torch.randn(batch, 3, 224, 224, device=device),))
        assert report["diagnostics"] == []
        totals[device] = {k: report["totals"][k] for k in ("module_flops", "macs", "dmas")}
        assert all(t["status"] == "complete" for t in totals[device].values())
    return totals


@pytest.mark.parametrize(("name", "batch"), [("vit_tiny_patch16_224", 1), ("eva02_tiny_patch14_224.mim_in22k", 2)])
def test_timm_module_metrics_count_the_same_on_cpu_and_meta(name: str, batch: int) -> None:
    """Module FLOPs, MACs and DMAs: on meta, SDPA's math path runs inside each attention block; its own copies
    are the core's, whose DMAs are the fused kernel's convention, as is the block's copy for its reshape when the
    fused kernel would have written q's layout (ViT's q is a slice of qkv: not contiguous)."""
    totals = _module_totals(name, batch)
    assert totals["cpu"] == totals["meta"]


def test_eva_at_batch_1_counts_the_block_copy_the_cpu_kernel_makes() -> None:
    """EVA's q is contiguous (a concatenation after its rotary embedding), so the CPU kernel writes a contiguous
    (B, H, T, D) output and the block's transpose and reshape copy it; at batch 1 the math path can view any q
    for its products and shows nothing of q's layout, so meta takes it as the common transposed layout and does
    not count that copy: 2 B T C per block less (documented in docs/module-formulas.md)."""
    totals = _module_totals("eva02_tiny_patch14_224.mim_in22k", 1)
    for metric in ("module_flops", "macs"):
        assert totals["cpu"][metric] == totals["meta"][metric]
    assert totals["cpu"]["dmas"]["value"] - totals["meta"]["dmas"]["value"] == 12 * 2 * 257 * 192
