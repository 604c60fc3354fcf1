"""Built-in estimates of torchvision's and timm's building blocks, matched by their operators (issue 18, item 2).

torchvision's own blocks (StochasticDepth, Permute, LayerNorm2d, SwapAxes, the window partition and departition
of MaxViT, ShiftedWindowAttention, MaxViT's relative-position attention) and timm's (its nn.LayerNorm, GELU,
Sigmoid and Linear subclasses with forwards of their own, LayerNorm2d, GroupNorm1, BatchNormAct2d, DropPath,
LayerScale, its attention modules, FastAdaptiveAvgPool, ...) have no torch.nn formula of their own; the crawl
recognizes them by the operators their calls run (docs/module-formulas.md, "Blocks matched by their operators").
Every model below: module metrics complete, no module diagnostic, and each block that a torch.nn family's
formulas answer equal to the operator FLOPs of the same call. torchvision's composites (Conv2dNormActivation,
SqueezeExcitation, MLP) keep their children's estimates: their own glue is not counted in the module view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import timm
import torch
from torchvision import models as M

from torchscan import crawl_module

METHOD = "torchscan_module_formula:signature_"
EQUAL_TO_OPERATORS = {"activation", "embedding", "identity", "layout", "linear", "norm", "pointwise", "pool"}


def img(size: int) -> tuple[torch.Tensor]:
    return (torch.rand(1, 3, size, size),)


def clip(frames: int, size: int) -> tuple[torch.Tensor]:
    return (torch.rand(1, 3, frames, size, size),)


def timm_model(name: str, **kwargs: Any) -> Callable[[], torch.nn.Module]:
    return lambda: timm.create_model(name, pretrained=False, **kwargs)


# name -> (model builder, inputs): torchvision's classification, segmentation and video families, and timm's
# most used families from timm.create_model(name, pretrained=False) (nothing is downloaded)
CASES: dict[str, tuple[Callable[[], torch.nn.Module], Callable[[], tuple[Any, ...]]]] = {
    "resnet18": (lambda: M.resnet18(), lambda: img(64)),
    "mobilenet_v3_small": (lambda: M.mobilenet_v3_small(), lambda: img(64)),
    "efficientnet_b0": (lambda: M.efficientnet_b0(), lambda: img(64)),
    "efficientnet_v2_s": (lambda: M.efficientnet_v2_s(), lambda: img(64)),
    "convnext_tiny": (lambda: M.convnext_tiny(), lambda: img(64)),
    "swin_t": (lambda: M.swin_t(), lambda: img(64)),
    "swin_v2_t": (lambda: M.swin_v2_t(), lambda: img(64)),
    "maxvit_t": (lambda: M.maxvit_t(), lambda: img(224)),
    "vit": (
        lambda: M.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64),
        lambda: img(32),
    ),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(), lambda: img(64)),
    "shufflenet_v2_x0_5": (lambda: M.shufflenet_v2_x0_5(), lambda: img(64)),
    "densenet121": (lambda: M.densenet121(), lambda: img(32)),
    "deeplabv3_mobilenet_v3_large": (
        lambda: M.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3),
        lambda: img(64),
    ),
    "r2plus1d_18": (lambda: M.video.r2plus1d_18(), lambda: clip(4, 32)),
    "swin3d_t": (lambda: M.video.swin3d_t(), lambda: clip(4, 64)),
    # quantizable variants, not quantized: their QuantStub/DeQuantStub return the input (Identity)
    "quantizable_resnet18": (lambda: M.quantization.resnet18(quantize=False), lambda: img(64)),
    "quantizable_mobilenet_v3_large": (lambda: M.quantization.mobilenet_v3_large(quantize=False), lambda: img(64)),
    "timm_resnet18": (timm_model("resnet18"), lambda: img(64)),
    "timm_efficientnet_b0": (timm_model("efficientnet_b0"), lambda: img(64)),
    "timm_tf_efficientnet_b0": (timm_model("tf_efficientnet_b0"), lambda: img(64)),  # Conv2dSame
    "timm_vit_tiny": (timm_model("vit_tiny_patch16_224", img_size=32, depth=2), lambda: img(32)),
    "timm_deit_tiny": (timm_model("deit_tiny_distilled_patch16_224", img_size=32, depth=2), lambda: img(32)),
    "timm_eva02_tiny": (timm_model("eva02_tiny_patch14_224", img_size=28, depth=2), lambda: img(28)),
    "timm_convnext_atto": (timm_model("convnext_atto"), lambda: img(64)),
    "timm_swin_tiny": (timm_model("swin_tiny_patch4_window7_224", depths=(1, 1, 1, 1)), lambda: img(224)),
    "timm_regnety_002": (timm_model("regnety_002"), lambda: img(64)),
    "timm_mobilevit_xxs": (timm_model("mobilevit_xxs"), lambda: img(64)),
    "timm_levit_128s": (timm_model("levit_128s"), lambda: img(224)),
    "timm_coatnet_nano": (timm_model("coatnet_nano_rw_224"), lambda: img(224)),
    "timm_poolformer_s12": (timm_model("poolformer_s12"), lambda: img(64)),
    "timm_fastvit_t8": (timm_model("fastvit_t8"), lambda: img(64)),
    "timm_ghostnet_100": (timm_model("ghostnet_100"), lambda: img(64)),
}

_reports: dict[str, dict] = {}


def report(name: str) -> dict:
    if name not in _reports:
        build, inputs = CASES[name]
        torch.manual_seed(0)
        _reports[name] = crawl_module(build().eval(), args=inputs())
    return _reports[name]


def signature(row: dict) -> str | None:
    method = row["metrics"].get("module_flops", {}).get("method", "")
    return method[len(METHOD) :] if method.startswith(METHOD) else None


def rows_of(name: str, type_name: str) -> list[dict]:
    return [r for r in report(name)["layers"] if r["type"] == type_name]


def value(row: dict, metric: str = "module_flops") -> int:
    result = row["metrics"][metric]
    assert result["status"] == "complete", (row["path"], metric, result)
    return result["value"]


@pytest.mark.parametrize("name", list(CASES))
def test_module_metrics_complete_and_native_blocks_equal_their_operators(name: str) -> None:
    rep = report(name)
    for metric in ("module_flops", "macs", "dmas"):
        assert rep["totals"][metric]["status"] == "complete", (metric, rep["diagnostics"])
    assert [d for d in rep["diagnostics"] if d.get("metric") != "flops"] == []
    for row in rep["layers"]:
        if signature(row) in EQUAL_TO_OPERATORS:
            assert value(row) == value(row, "operator_flops"), (row["path"], signature(row))


def test_torchvision_blocks_by_hand() -> None:
    # ConvNeXt's LayerNorm2d(96): permute, LayerNorm over C, permute on (1, 96, 16, 16): (6 + 2)N + 2R
    (norm, *_) = rows_of("convnext_tiny", "LayerNorm2d")
    n, rows = 96 * 16 * 16, 16 * 16
    assert signature(norm) == "norm" and value(norm) == 8 * n + 2 * rows
    assert value(norm, "dmas") == 4 * n + 5 * rows + 1 + 2 * 96 + 2 * n
    # Permute is a view; StochasticDepth in eval returns its input (Identity: N DMAs)
    permute = rows_of("convnext_tiny", "Permute")[0]
    assert signature(permute) == "layout" and (value(permute), value(permute, "dmas")) == (0, 0)
    depth = rows_of("convnext_tiny", "StochasticDepth")[0]
    assert signature(depth) == "identity" and value(depth, "dmas") == 96 * 16 * 16
    # MaxViT's window partition copies (1, 64, 56, 56) once: read and written, 2 DMAs per element
    partition = rows_of("maxvit_t", "WindowPartition")[0]
    assert signature(partition) == "layout" and value(partition, "dmas") == 2 * 64 * 56 * 56
    assert signature(rows_of("maxvit_t", "SwapAxes")[0]) == "layout"
    # torchvision's shifted-window attention runs its projections itself (F.linear on its children's
    # weights): 16x16 tokens padded to 21x21, 9 windows of 49, 3 heads of width 32, relative position bias
    attn = rows_of("swin_t", "ShiftedWindowAttention")[0]
    tokens, windows, heads, d = 49, 9, 3, 32
    r = windows * heads * tokens
    core = r * d + r * tokens * (2 * d - 1) + r * tokens + r * (5 * tokens - 2) + r * d * (2 * tokens - 1)
    qkv = windows * tokens * 288 * (2 * 96)  # Linear's O(2 in - 1) + O
    proj = windows * tokens * 96 * (2 * 96)
    assert signature(attn) == "attention" and value(attn) == core + qkv + proj


def test_timm_blocks_by_hand() -> None:
    # BatchNormAct2d normalizes itself (its act is a child with a row of its own): BatchNorm's eval formula
    bn = rows_of("timm_efficientnet_b0", "BatchNormAct2d")[0]
    n, c = 32 * 32 * 32, 32
    assert signature(bn) == "norm" and value(bn) == 2 * n + 2 * c + 2 * n
    # timm's GELU subclass calls F.gelu: exact GELU, 5 per element
    gelu = rows_of("timm_convnext_atto", "GELU")[0]
    assert signature(gelu) == "activation" and value(gelu) == 5 * 160 * 16 * 16
    # FastAdaptiveAvgPool on NHWC (1, 7, 7, 768): mean over (1, 2), AdaptiveAvgPool2d(1)'s N
    pool = rows_of("timm_swin_tiny", "FastAdaptiveAvgPool")[0]
    assert signature(pool) == "pool" and value(pool) == 7 * 7 * 768
    # DropPath in eval returns its input
    assert signature(rows_of("timm_swin_tiny", "DropPath")[0]) == "identity"
    # timm's WindowAttention normalizes with an nn.Softmax child, which counts the softmax: the attention row
    # counts the rest of the core (64 windows of 49 tokens, 3 heads of width 32, relative position bias)
    attn = rows_of("timm_swin_tiny", "WindowAttention")[0]
    softmax = next(r for r in report("timm_swin_tiny")["layers"] if r["path"] == attn["path"] + ".softmax")
    rows_, s, d = 64 * 3 * 49, 49, 32
    assert value(softmax) == rows_ * (5 * s - 2)
    assert value(attn) == rows_ * d + rows_ * s * (2 * d - 1) + rows_ * s + rows_ * d * (2 * s - 1)
    # Conv2dSame pads (0, 1, 0, 1) itself, then a stride-2 3x3 convolution without bias on (1, 3, 65, 65):
    # Conv's O (2 Cin K - 1), 2K - 1 per output against the operator view's 2K
    stem = rows_of("timm_tf_efficientnet_b0", "Conv2dSame")[0]
    o = 32 * 32 * 32
    assert signature(stem) == "conv" and value(stem) == o * (2 * 27 - 1)
    assert value(stem, "operator_flops") - value(stem) == o
    # an unconverted QuantStub returns its input
    stub = rows_of("quantizable_resnet18", "QuantStub")[0]
    assert signature(stub) == "identity" and value(stub, "dmas") == 3 * 64 * 64
    # LayerScale2d multiplies by gamma: a pointwise chain, one product per element
    scale = rows_of("timm_fastvit_t8", "LayerScale2d")[0]
    assert signature(scale) == "pointwise" and value(scale) == 48 * 16 * 16
