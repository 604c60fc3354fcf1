"""observe.c: a layer call's description in the mode the call began in (extb).

The crawl runs in eval mode, but a caller's forward pre-hook may switch a module to training (MC dropout, batch
statistics). A lazy module is read again when its call materializes it, and that reading must keep the mode the
call began in. BatchNorm1d(3) on (4, 3), from docs/module-formulas.md: N 12, C 3, A 2 (affine), M 4.
Eval: FLOPs 2N + 2C + AN = 54; MACs N(1 + 1) = 24; DMAs N + 1 + 2C + 2C + 1 + O = 38.
Training with tracked stats: FLOPs + 4N + C(3 + 5) = 126; MACs + C(M-1) + C(2M-1) + 4C = 66; DMAs + 1 + 2C = 45.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module


def _counts(module, train_hook):
    if train_hook:
        module.register_forward_pre_hook(lambda mod, args: mod.train() and None)
    report = crawl_module(nn.Sequential(module), args=(torch.rand(4, 3),))
    metrics = report["layers"][1]["metrics"]
    assert all(metrics[k]["status"] == "complete" for k in ("module_flops", "macs", "dmas"))
    return tuple(metrics[k]["value"] for k in ("module_flops", "macs", "dmas"))


@pytest.mark.parametrize("make", [lambda: nn.BatchNorm1d(3), nn.LazyBatchNorm1d], ids=["BatchNorm1d", "lazy"])
def test_a_call_switched_to_training_counts_batch_statistics(make):
    assert _counts(make(), train_hook=False) == (54, 24, 38)
    assert _counts(make(), train_hook=True) == (126, 66, 45)
