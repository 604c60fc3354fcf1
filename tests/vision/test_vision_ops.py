"""Operator formulas of the operators torchvision's detection, segmentation, video and optical-flow models
run (docs/operator-flops.md), through measure_flops on the real operators, pinned by hand arithmetic from
the stated conventions. FlopCounterMode counts none of these operators (it has matmul, convolution and
attention formulas only), except the matrix product inside deform_conv2d, which is pinned against its count
of the equivalent convolution."""

from __future__ import annotations

import math

import pytest
import torch
import torchvision.ops as tvops
from torch.nn import functional as F

from conftest import flopcounter_counts
from torchscan import measure_flops


def run(workload):
    with torch.no_grad():
        return measure_flops(workload)


def counted(workload) -> tuple[dict[str, int], dict]:
    r = run(workload)
    return r["by_operator"], r


def assert_complete(r: dict) -> None:
    assert r["total"]["status"] == "complete", r["diagnostics"]
    assert r["diagnostics"] == []


def boxes(k: int, size: float = 8.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(k)
    xy = torch.rand(k, 2, generator=g) * size / 2
    wh = torch.rand(k, 2, generator=g) * size / 2 + 1
    return torch.cat([xy, xy + wh], dim=1)


@pytest.mark.parametrize("fn", [torch.floor, torch.ceil, torch.round, torch.trunc, torch.log2])
def test_rounding_and_log2_one_per_element(fn) -> None:
    x = torch.rand(2, 3) + 0.5
    ops, r = counted(lambda: fn(x))
    assert_complete(r)
    assert sum(ops.values()) == 6  # one operation per output element


def test_round_decimals_and_remainder() -> None:
    x = torch.rand(2, 3)
    ops, r = counted(lambda: torch.round(x, decimals=2))
    assert_complete(r)
    assert ops == {"aten.round": 3 * 6}  # scale, round, scale back
    ops, r = counted(lambda: torch.remainder(x, 0.3))
    assert ops == {"aten.remainder": 4 * 6}  # a - b*floor(a/b)
    # index arithmetic on integers (the detection heads' `idx % num_classes`) counts nothing
    i = torch.arange(12)
    ops, r = counted(lambda: i % 5)
    assert_complete(r)
    assert ops == {"aten.remainder": 0}


def test_sort_topk_unique_nonzero() -> None:
    x = torch.rand(3, 8)
    ops, r = counted(lambda: torch.sort(x, dim=-1, descending=True))
    assert_complete(r)
    assert ops == {"aten.sort": 3 * 8 * math.ceil(math.log2(8))}
    ops, r = counted(lambda: torch.sort(x, dim=0, stable=True))
    assert ops == {"aten.sort": 8 * 3 * math.ceil(math.log2(3))}
    y = torch.rand(2, 10)
    for k in (1, 3, 4):
        levels = math.floor(math.log2(k)) + 1  # a binary heap of the k best
        ops, r = counted(lambda: torch.topk(y, k))
        assert_complete(r)
        assert ops == {"aten.topk": 2 * 10 * levels}
    z = torch.tensor([3.0, 1.0, 3.0, 2.0, 5.0, 1.0, 0.5, 7.0, 2.0, 9.0])
    ops, r = counted(lambda: torch.unique(z, return_inverse=True, return_counts=True))
    assert_complete(r)
    assert ops == {"aten._unique2": 10 * math.ceil(math.log2(10)) + 9}
    m = torch.rand(3, 4)
    ops, r = counted(lambda: torch.nonzero(m))
    assert ops == {"aten.nonzero": 12}
    ops, r = counted(lambda: torch.nonzero(m > 0.5))
    assert_complete(r)
    assert ops["aten.nonzero"] == 0  # a boolean mask: no floating-point work
    # integer keys (labels) count nothing
    ops, r = counted(lambda: torch.sort(torch.arange(10)))
    assert ops == {"aten.sort": 0}


def test_nms() -> None:
    b, s = boxes(6), torch.rand(6)
    ops, r = counted(lambda: tvops.nms(b, s, 0.5))
    assert_complete(r)
    # sort 6*ceil(log2 6) + areas 3*6 + 13 per pair of the 15 pairs
    assert ops == {"torchvision.nms": 6 * 3 + 18 + 13 * 15}
    # batched_nms offsets the boxes per class, then calls nms (N = 6 again)
    ops, r = counted(lambda: tvops.batched_nms(b, s, torch.tensor([0, 1, 0, 1, 0, 1]), 0.5))
    assert_complete(r)
    assert ops["torchvision.nms"] == 6 * 3 + 18 + 13 * 15


def test_roi_align_and_ps_roi_align() -> None:
    x = torch.rand(1, 4, 8, 8)
    rois = [boxes(3)]
    ops, r = counted(lambda: tvops.roi_align(x, rois, output_size=2, spatial_scale=1.0, sampling_ratio=2))
    assert_complete(r)
    bins, samples, channels = 3 * 2 * 2, 2 * 2, 4
    assert ops["torchvision.roi_align"] == bins * samples * (8 + 8 * channels) + bins * channels
    # adaptive sampling: the samples per bin come from the ROIs' values, a lower bound
    r = run(lambda: tvops.roi_align(x, rois, output_size=2, sampling_ratio=-1))
    assert r["total"]["status"] == "partial"
    [d] = r["diagnostics"]
    assert d["code"] == "incomplete_operator_formula" and d["operator"] == "torchvision.roi_align"
    assert "sampling_ratio <= 0" in d["message"]
    assert r["by_operator"]["torchvision.roi_align"] == bins * 1 * (8 + 8 * channels) + bins * channels

    y = torch.rand(1, 8, 6, 6)  # 8 channels = 2 output channels * 2*2 bins
    ops, r = counted(lambda: tvops.ps_roi_align(y, [boxes(2, 6.0)], output_size=2, sampling_ratio=2))
    assert_complete(r)
    outputs = 2 * 2 * 2 * 2
    assert ops["torchvision.ps_roi_align"] == outputs * (16 * 4 + 1)


@pytest.mark.parametrize("op", [tvops.roi_pool, tvops.ps_roi_pool])
def test_roi_pool_is_a_lower_bound(op) -> None:
    x = torch.rand(1, 8, 8, 8)
    r = run(lambda: op(x, [boxes(3)], output_size=2))
    assert r["total"]["status"] == "partial"
    [d] = r["diagnostics"]
    assert d["code"] == "incomplete_operator_formula"
    assert "coordinates are tensor values" in d["message"]


@pytest.mark.parametrize("use_mask", [False, True])
def test_deform_conv2d(use_mask: bool) -> None:
    torch.manual_seed(0)
    x = torch.rand(2, 4, 6, 6)
    weight = torch.rand(6, 2, 3, 3)  # 2 groups
    bias = torch.rand(6)
    offset = torch.rand(2, 2 * 9, 4, 4)
    mask = torch.rand(2, 9, 4, 4) if use_mask else None
    ops, r = counted(lambda: tvops.deform_conv2d(x, offset, weight, bias, mask=mask))
    assert_complete(r)
    # the matrix product, as FlopCounterMode counts the same grouped convolution
    conv = sum(flopcounter_counts(lambda: F.conv2d(x, weight, bias, groups=2)).values())
    assert conv == 2 * 2 * 6 * 2 * 9 * 16
    columns = 2 * 4 * 9 * 4 * 4
    bias_adds = 2 * 6 * 4 * 4
    assert ops["torchvision.deform_conv2d"] == columns * (17 + use_mask) + conv + bias_adds


def test_grid_sample_and_bicubic() -> None:
    x = torch.rand(1, 3, 5, 5)
    grid = torch.rand(1, 4, 6, 2) * 2 - 1
    points = 4 * 6
    ops, r = counted(lambda: F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True))
    assert_complete(r)
    assert ops["aten.grid_sampler_2d"] == points * (4 + 8) + points * 3 * 7
    ops, r = counted(lambda: F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=False))
    assert ops["aten.grid_sampler_2d"] == points * (4 + 4 + 2)
    ops, r = counted(lambda: F.grid_sample(x, grid, mode="bicubic", padding_mode="reflection", align_corners=False))
    assert ops["aten.grid_sampler_2d"] == points * (4 + 16 * 18 + 54) + points * 3 * 35
    ops, r = counted(lambda: F.interpolate(torch.rand(1, 2, 3, 3), size=(6, 6), mode="bicubic", align_corners=False))
    assert_complete(r)
    assert ops["aten.upsample_bicubic2d"] == 2 * 36 * 35
