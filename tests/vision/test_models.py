"""torchvision's model families and a few timm models, with random weights (weights=None) in eval mode at
small input sizes: their operator FLOPs are complete, and equal to FlopCounterMode's count on every
operator FlopCounterMode counts (matrix products, convolutions, attention).

Detection models are built with score thresholds of 0, so that their post-processing (top-k, NMS, ROI
pooling, mask pasting, keypoint decoding) runs on random weights, and a few detections per image.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import timm
import torch
from torchvision import models as M

from conftest import assert_flopcounter_parity, flopcounter_counts
from torchscan import measure_flops


def img(size: int = 64, batch: int = 1) -> torch.Tensor:
    return torch.rand(batch, 3, size, size)


def clip(frames: int, size: int) -> torch.Tensor:
    return torch.rand(1, 3, frames, size, size)


def images(size: int = 128) -> list[torch.Tensor]:
    return [torch.rand(3, size, size)]


DET = {"weights": None, "weights_backbone": None, "min_size": 128, "max_size": 128, "detections_per_img": 10}
TWO_STAGE = {**DET, "box_score_thresh": 0.0, "box_detections_per_img": 10}
del TWO_STAGE["detections_per_img"]
ONE_STAGE = {**DET, "score_thresh": 0.0}

# name -> (model builder, inputs builder, operators the forward must run)
CASES: dict[str, tuple[Callable[[], torch.nn.Module], Callable[[], tuple[Any, ...]], set[str]]] = {
    # classification
    "resnet18": (lambda: M.resnet18(), lambda: (img(),), set()),
    "mobilenet_v3_small": (lambda: M.mobilenet_v3_small(), lambda: (img(),), set()),
    "efficientnet_b0": (lambda: M.efficientnet_b0(), lambda: (img(),), set()),
    "vit": (
        lambda: M.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64),
        lambda: (img(32),),
        set(),
    ),
    "swin_t": (lambda: M.swin_t(), lambda: (img(64),), set()),
    "maxvit_t": (lambda: M.maxvit_t(), lambda: (img(224),), set()),
    "convnext_tiny": (lambda: M.convnext_tiny(), lambda: (img(),), set()),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(), lambda: (img(),), set()),
    "googlenet": (lambda: M.googlenet(init_weights=True, aux_logits=False), lambda: (img(),), set()),
    "inception_v3": (lambda: M.inception_v3(init_weights=True, aux_logits=False), lambda: (img(75),), set()),
    "squeezenet1_1": (lambda: M.squeezenet1_1(), lambda: (img(),), set()),
    "shufflenet_v2_x0_5": (lambda: M.shufflenet_v2_x0_5(), lambda: (img(),), set()),
    "densenet121": (lambda: M.densenet121(), lambda: (img(32),), set()),
    "mnasnet0_5": (lambda: M.mnasnet0_5(), lambda: (img(),), set()),
    # segmentation
    "fcn_resnet50": (
        lambda: M.segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=3),
        lambda: (img(),),
        {"aten.upsample_bilinear2d"},
    ),
    "deeplabv3_mobilenet_v3_large": (
        lambda: M.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3),
        lambda: (img(),),
        {"aten.upsample_bilinear2d"},
    ),
    "lraspp_mobilenet_v3_large": (
        lambda: M.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3),
        lambda: (img(),),
        {"aten.upsample_bilinear2d"},
    ),
    # video
    "r3d_18": (lambda: M.video.r3d_18(), lambda: (clip(4, 32),), set()),
    "r2plus1d_18": (lambda: M.video.r2plus1d_18(), lambda: (clip(4, 32),), set()),
    "s3d": (lambda: M.video.s3d(), lambda: (clip(16, 224),), set()),  # its head pools (2, 7, 7)
    "swin3d_t": (lambda: M.video.swin3d_t(), lambda: (clip(4, 64),), set()),
    # detection
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        lambda: M.detection.fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=3, **TWO_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "torchvision.roi_align", "aten.topk"},
    ),
    "fasterrcnn_resnet50_fpn": (
        lambda: M.detection.fasterrcnn_resnet50_fpn(num_classes=3, **TWO_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "torchvision.roi_align", "aten.topk"},
    ),
    "retinanet_resnet50_fpn": (
        lambda: M.detection.retinanet_resnet50_fpn(num_classes=3, **ONE_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "aten.topk", "aten._unique2"},
    ),
    "fcos_resnet50_fpn": (
        lambda: M.detection.fcos_resnet50_fpn(num_classes=3, **ONE_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "aten.topk"},
    ),
    "ssd300_vgg16": (
        lambda: M.detection.ssd300_vgg16(weights=None, weights_backbone=None, num_classes=3, score_thresh=0.0,
                                         detections_per_img=10),
        lambda: (images(),),
        {"torchvision.nms", "aten.topk"},
    ),
    "ssdlite320_mobilenet_v3_large": (
        lambda: M.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3,
                                                          score_thresh=0.0, detections_per_img=10),
        lambda: (images(),),
        {"torchvision.nms", "aten.topk"},
    ),
    "maskrcnn_resnet50_fpn": (
        lambda: M.detection.maskrcnn_resnet50_fpn(num_classes=3, **TWO_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "torchvision.roi_align", "aten.upsample_bilinear2d"},
    ),
    "keypointrcnn_resnet50_fpn": (
        lambda: M.detection.keypointrcnn_resnet50_fpn(num_classes=2, num_keypoints=5, **TWO_STAGE),
        lambda: (images(),),
        {"torchvision.nms", "torchvision.roi_align", "aten.upsample_bicubic2d"},
    ),
    # optical flow: feature maps must be at least 16 after the 8x encoder
    "raft_small": (
        lambda: M.optical_flow.raft_small(),
        lambda: (img(128), img(128), 3),  # 3 flow updates
        {"aten.grid_sampler_2d"},
    ),
    # quantizable variants, not quantized
    "quantizable_resnet18": (lambda: M.quantization.resnet18(quantize=False), lambda: (img(),), set()),
    "quantizable_mobilenet_v2": (lambda: M.quantization.mobilenet_v2(quantize=False), lambda: (img(),), set()),
    "quantizable_mobilenet_v3_large": (
        lambda: M.quantization.mobilenet_v3_large(quantize=False),
        lambda: (img(),),
        set(),
    ),
    "quantizable_shufflenet_v2_x0_5": (
        lambda: M.quantization.shufflenet_v2_x0_5(quantize=False),
        lambda: (img(),),
        set(),
    ),
    "quantizable_googlenet": (
        lambda: M.quantization.googlenet(quantize=False, init_weights=True, aux_logits=False),
        lambda: (img(),),
        set(),
    ),
    # timm, built from its configs (pretrained=False: nothing is downloaded)
    "timm_resnet18": (lambda: timm.create_model("resnet18", pretrained=False), lambda: (img(),), set()),
    "timm_vit_tiny": (
        lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=2),
        lambda: (img(32),),
        set(),
    ),
    "timm_convnext_atto": (lambda: timm.create_model("convnext_atto", pretrained=False), lambda: (img(),), set()),
    "timm_efficientnet_b0": (lambda: timm.create_model("efficientnet_b0", pretrained=False), lambda: (img(),), set()),
}


# Fixed input sizes make these slow (MViT V2: 16 frames of 224 x 224, about 30 s on two cores); they run with
# --run-slow (make vision-test VISION_ARGS=--run-slow).
SLOW = {
    "mvit_v2_s": (lambda: M.video.mvit_v2_s(), lambda: (clip(16, 224),), set()),
}
CASES.update(SLOW)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES])
def test_operator_flops_complete_and_equal_to_flopcountermode(name: str) -> None:
    build, inputs, must_run = CASES[name]
    torch.manual_seed(0)
    model = build().eval()
    x = inputs()

    def forward() -> Any:
        with torch.no_grad():
            return model(*x)

    report = measure_flops(forward)
    assert report["diagnostics"] == [], report["diagnostics"]
    assert report["total"]["status"] == "complete"
    ours = report["by_operator"]
    assert report["total"]["value"] == sum(ours.values())
    assert must_run <= set(ours), f"{name} did not run {must_run - set(ours)}"
    assert_flopcounter_parity(report, flopcounter_counts(forward))
