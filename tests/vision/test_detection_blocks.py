"""Module metrics of torchvision's detection families and RAFT (issue 18): the blocks that no torch.nn family
describes, matched by what their calls compute (docs/module-formulas.md, "Blocks matched by their operators",
vision pipelines): anchors and default boxes (`grid`), image batching, mask pasting and feature resizing
(`resample`), region pooling (`roi_pool`), proposal filtering and detections (`postprocess`), RAFT's correlation
volume and lookups (`correlation`).

Every model: module metrics complete, no module diagnostic. Each of these rows counts its operators as the
operator view does (torchscan_flops_v1), but for interpolations, counted by nn.Upsample's convention (bilinear
7 per output against the operator view's 9, bicubic 31 against 35), and matrix products, counted by the module
convention (2K - 1 per output against 2K): the differences are checked against the same workload's operator
counts (measure_flops), and a few rows by hand.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torchvision.models import detection as D

from test_models import CASES as MODEL_CASES
from torchscan import crawl_module, measure_flops

METHOD = "torchscan_module_formula:signature_"
VISION = {"grid", "resample", "roi_pool", "postprocess", "correlation"}
NAMES = [
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_resnet50_fpn",
    "retinanet_resnet50_fpn",
    "fcos_resnet50_fpn",
    "ssd300_vgg16",
    "ssdlite320_mobilenet_v3_large",
    "maskrcnn_resnet50_fpn",
    "keypointrcnn_resnet50_fpn",
    "raft_small",
]
# the class each signature matched, per model
EXPECTED = {
    "AnchorGenerator": "grid",
    "DefaultBoxGenerator": "grid",
    "GeneralizedRCNNTransform": "resample",
    "FeaturePyramidNetwork": "resample",
    "MultiScaleRoIAlign": "roi_pool",
    "RegionProposalNetwork": "postprocess",
    "RoIHeads": "postprocess",
    "RetinaNet": "postprocess",
    "FCOS": "postprocess",
    "SSD": "postprocess",
    "MaskRCNN": "resample",
    "KeypointRCNNPredictor": "resample",
    "RAFT": "correlation",
}

_runs: dict[str, tuple[dict, dict]] = {}


def run(name: str) -> tuple[dict, dict]:
    """The crawl of the model and the operator counts of the same forward (measure_flops)."""
    if name not in _runs:
        build, inputs, _ = MODEL_CASES[name]
        torch.manual_seed(0)
        model = build().eval()
        twin = copy.deepcopy(model)  # a first call too: MultiScaleRoIAlign sets its scales up in its first
        x = inputs()
        report = crawl_module(model, args=x)

        def forward() -> Any:
            with torch.no_grad():
                return twin(*x)

        _runs[name] = (report, measure_flops(forward))
    return _runs[name]


def signature(row: dict) -> str | None:
    method = row["metrics"].get("module_flops", {}).get("method", "")
    return method[len(METHOD) :] if method.startswith(METHOD) else None


def value(row: dict, metric: str = "module_flops") -> int:
    result = row["metrics"][metric]
    assert result["status"] == "complete", (row["path"], metric, result)
    return result["value"]


def rows(name: str, type_name: str) -> list[dict]:
    return [r for r in run(name)[0]["layers"] if r["type"] == type_name]


@pytest.mark.parametrize("name", NAMES)
def test_module_metrics_complete(name: str) -> None:
    report, flops = run(name)
    for metric in ("module_flops", "macs", "dmas", "operator_flops"):
        assert report["totals"][metric]["status"] == "complete", (metric, report["diagnostics"])
    assert report["diagnostics"] == []
    # the crawl counts the operators of the same forward as measure_flops
    assert report["totals"]["operator_flops"]["value"] == flops["total"]["value"]
    matched = {r["type"]: signature(r) for r in report["layers"] if signature(r) in VISION}
    assert matched, name
    for type_name, sig in matched.items():
        assert EXPECTED[type_name] == sig, (type_name, sig)
    # each such row counts its operators (torchscan_flops_v1) but its interpolations (Upsample's convention:
    # 2 less per bilinear output, 4 less per bicubic one) and matrix products (module convention, RAFT's
    # correlation: 1 less per output); every interpolation of these models runs in such a row
    by_op = flops["by_operator"]
    bilinear = by_op.get("aten.upsample_bilinear2d", 0)
    bicubic = by_op.get("aten.upsample_bicubic2d", 0)
    assert bilinear % 9 == 0 and bicubic % 35 == 0
    products = 256 * 256 if name == "raft_small" else 0  # (16 x 16)^2 correlations of 1/8-scale maps
    difference = sum(value(r, "operator_flops") - value(r) for r in report["layers"] if signature(r) in VISION)
    assert difference == 2 * bilinear // 9 + 4 * bicubic // 35 + products


def test_equal_to_their_operators() -> None:
    # without interpolations or products, the rows equal their operator counts (Keypoint R-CNN's RoIHeads
    # upsamples its heatmaps: bicubic)
    for name in NAMES:
        for row in run(name)[0]["layers"]:
            sig = signature(row)
            interpolates = name == "keypointrcnn_resnet50_fpn" and row["type"] == "RoIHeads"
            if sig in {"grid", "roi_pool"} or (sig == "postprocess" and not interpolates):
                assert value(row) == value(row, "operator_flops"), (name, row["path"])


def test_by_hand() -> None:
    # AnchorGenerator: the anchors are integer shifts plus float base anchors, one add per coordinate:
    # 4 per anchor. Faster R-CNN MobileNetV3 320 on 128 x 128: 15 anchors per location on 4x4, 4x4, 2x2 maps
    anchors = rows("fasterrcnn_mobilenet_v3_large_320_fpn", "AnchorGenerator")[0]
    assert value(anchors) == 4 * 15 * (16 + 16 + 4)
    # RetinaNet: 9 anchors per location on 16, 8, 4, 2, 1 maps
    assert value(rows("retinanet_resnet50_fpn", "AnchorGenerator")[0]) == 4 * 9 * (256 + 64 + 16 + 4 + 1)
    # GeneralizedRCNNTransform on one (3, 128, 128) image, kept at 128: normalized (a subtraction and a
    # division per element), resized (bilinear, Upsample's 7 FLOPs, 4 MACs per output), padded into the batch
    transform = rows("fasterrcnn_resnet50_fpn", "GeneralizedRCNNTransform")[0]
    n = 3 * 128 * 128
    assert value(transform) == 2 * n + 7 * n
    assert value(transform, "macs") == 4 * n
    assert value(transform, "operator_flops") == 2 * n + 9 * n
    # RAFT small on two 128 x 128 frames, 3 updates: the correlation of the two (1, 128, 16, 16) feature maps
    # by the module convention, 256 x 256 outputs of 2 * 128 - 1
    raft = rows("raft_small", "RAFT")[0]
    assert value(raft, "macs") >= 256 * 256 * 128
    assert value(raft, "operator_flops") - value(raft) == 256 * 256 + 3 * 2 * (2 * 128 * 128)


def test_many_detections() -> None:
    # Mask R-CNN with its default 100 detections: its mask pasting runs thousands of operators in the model's
    # own call (a loop over the detections), past the window the other signatures read; still matched
    torch.manual_seed(0)
    model = D.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=3, min_size=128, max_size=128, box_score_thresh=0.0
    ).eval()
    report = crawl_module(model, args=([torch.rand(3, 128, 128)],))
    assert report["diagnostics"] == []
    root = report["layers"][0]
    assert signature(root) == "resample"
    assert 0 < value(root) < value(root, "operator_flops")
