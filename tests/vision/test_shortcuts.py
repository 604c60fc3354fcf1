"""An empty nn.Sequential used as an identity shortcut (timm's GhostNet: `self.shortcut = nn.Sequential()`)
is a complete zero for module metrics, as nn.Identity: 0 FLOPs, 0 MACs, its input read once (DMAs N)."""

from __future__ import annotations

import math

import timm
import torch
from torch import nn

from torchscan import crawl_module


def test_ghostnet_identity_shortcuts_are_complete_zeros() -> None:
    torch.manual_seed(0)
    model = timm.create_model("ghostnet_050", pretrained=False).eval()
    empty = {name for name, m in model.named_modules() if type(m) is nn.Sequential and len(m) == 0}
    assert empty, "ghostnet_050 has no empty nn.Sequential shortcut any more"
    report = crawl_module(model, args=(torch.rand(1, 3, 64, 64),))
    shortcuts = [layer for layer in report["layers"] if layer["path"] in empty]
    assert shortcuts, "no shortcut was called"
    for layer in shortcuts:
        metrics = layer["metrics"]
        for name in ("module_flops", "macs", "dmas"):
            assert metrics[name]["status"] == "complete", (layer["path"], name, metrics[name])
        assert metrics["module_flops"]["value"] == 0 and metrics["macs"]["value"] == 0
        # Identity's DMAs: the input's elements, read once
        [x] = layer["input"]["args"]
        assert metrics["dmas"]["value"] == math.prod(x["shape"])
    assert not [d for d in report["diagnostics"] if "Sequential" in d["message"]]
