"""Shared helpers for the TorchScan Python suite.

Run against the *installed* package (``pip install --no-build-isolation
--no-deps .`` then ``pytest tests/python`` from outside the source tree), so
that ``torchscan._engine`` is the built C extension.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# Operators that PyTorch's own FlopCounterMode counts (matmuls, convolutions,
# fused attention). On these our counts must equal its counts exactly.
FLOPCOUNTER_OPS = {str(packet) for packet in torch.utils.flop_counter.flop_registry}


def flopcounter_counts(workload: Callable[[], Any]) -> dict[str, int]:
    """PyTorch's reference counts: FlopCounterMode's "Global" bucket, by packet name."""
    with FlopCounterMode(display=False) as counter:
        workload()
    return {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}


def assert_flopcounter_parity(ours: dict[str, Any], reference: dict[str, int]) -> None:
    """Every operator FlopCounterMode counted has our identical count, and every
    operator of ours that FlopCounterMode has a formula for was also counted by it.

    ``ours`` is a FlopReport (its ``matrix_product_flops`` are compared: the matrix
    products of every operator that ran them, also those an attention call groups
    under ``aten.scaled_dot_product_attention``) or a ``by_operator`` dict of a
    workload without attention."""
    assert reference, "the oracle counted nothing: the workload does not exercise a matmul/conv"
    if "matrix_product_flops" in ours:
        ours = ours["matrix_product_flops"]
    for op, n in reference.items():
        assert ours.get(op) == n, f"{op}: ours {ours.get(op)} != FlopCounterMode {n}"
    for op, n in ours.items():
        if op in FLOPCOUNTER_OPS and n:
            assert op in reference, f"{op} counted by us ({n}) but not by FlopCounterMode"


def assert_nothing_left(model: nn.Module) -> None:
    """No hook on any module, no dispatch mode on the stack."""
    for name, m in model.named_modules():
        assert not m._forward_hooks, f"forward hook left on {name!r}"
        assert not m._forward_pre_hooks, f"forward pre-hook left on {name!r}"
        for extra in ("_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called"):
            assert not getattr(m, extra, {}), f"{extra} entry left on {name!r}"
        own = vars(m).get("forward")
        assert own is None or not type(own).__module__.startswith("torchscan"), f"forward wrapper left on {name!r}"
    assert torch._C._len_torch_dispatch_stack() == 0
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None  # saved_activations' hooks
    # global module hooks are not ours to touch, but must not have grown
    assert not nn.modules.module._global_forward_hooks
    assert not nn.modules.module._global_forward_pre_hooks


def training_flags(model: nn.Module) -> dict[str, bool]:
    return {name: m.training for name, m in model.named_modules()}


def json_roundtrip(obj: Any) -> Any:
    return json.loads(json.dumps(obj, allow_nan=False))


class CountingModule(nn.Module):
    """Counts how many times its forward ran (validation must happen before)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, *rest: Any, **kwargs: Any) -> torch.Tensor:
        self.calls += 1
        return self.lin(x)


class UnsupportedLeaf(nn.Module):
    """A leaf module (no children) with no module formula anywhere."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


@pytest.fixture
def counting_module() -> CountingModule:
    return CountingModule()


@pytest.fixture(autouse=True)
def _no_dispatch_mode_leak():
    """Every test starts and ends with an empty dispatch-mode stack."""
    assert torch._C._len_torch_dispatch_stack() == 0
    yield
    assert torch._C._len_torch_dispatch_stack() == 0
