"""A KeyboardInterrupt at every boundary a crawl observes leaves nothing behind.

The interrupt is raised at the k-th boundary, k = 1, 2, ... until a call completes: in a module's forward before and
after each child call (every depth), in a forward hook of the caller's, in a custom operator formula (the k-th
operator call) and in a custom module handler (the k-th module call). After each interrupted call the model has no
hook, wrapper or dispatch mode left, its training flags are its own again, and the next call's report equals the
report of a call that was never interrupted.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_nothing_left, training_flags
from torch import nn

from torchscan import ModuleHandler, crawl_module, measure_flops


class _Boundaries:
    """Counts boundaries; raises KeyboardInterrupt at the armed one."""

    def __init__(self) -> None:
        self.count, self.armed = 0, None

    def tick(self) -> None:
        self.count += 1
        if self.count == self.armed:
            raise KeyboardInterrupt


class Ticking(nn.Module):
    """A block that ticks before and after its child (a boundary on both sides of a child's call)."""

    def __init__(self, child: nn.Module, boundaries: _Boundaries) -> None:
        super().__init__()
        self.child = child
        self.boundaries = [boundaries]  # a list: not a submodule, not a parameter

    def forward(self, x):
        self.boundaries[0].tick()
        y = self.child(x)
        self.boundaries[0].tick()
        return torch.relu(y)


def _model(boundaries: _Boundaries) -> nn.Module:
    # depth 4: Ticking(Sequential(Ticking(Sequential(Linear, Dropout, Ticking(Linear)))))
    inner = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), Ticking(nn.Linear(4, 4), boundaries))
    return Ticking(nn.Sequential(Ticking(inner, boundaries), nn.BatchNorm1d(4)), boundaries).train()


def _interrupt_everywhere(run, boundaries: _Boundaries, model: nn.Module) -> int:
    """Runs `run` with the interrupt armed at boundary 1, 2, ...: returns how many calls were interrupted."""
    flags = training_flags(model)
    torch.manual_seed(0)
    boundaries.armed = None
    boundaries.count = 0
    expected = run()
    total = boundaries.count
    assert total > 0
    for k in range(1, total + 1):
        boundaries.count, boundaries.armed = 0, k
        with pytest.raises(KeyboardInterrupt):
            run()
        assert_nothing_left(model)
        assert training_flags(model) == flags, f"training flags changed by an interrupt at boundary {k}"
    boundaries.count, boundaries.armed = 0, None
    torch.manual_seed(0)
    assert run() == expected
    return total


@pytest.mark.parametrize("entry", ["crawl_module", "crawl_module saved_activations", "measure_flops"])
def test_an_interrupt_in_a_forward_at_every_depth(entry):
    boundaries = _Boundaries()
    model = _model(boundaries)
    x = torch.rand(3, 4)

    def run():
        if entry == "crawl_module":
            return crawl_module(model, args=(x,))
        if entry == "crawl_module saved_activations":
            return crawl_module(model, args=(x,), saved_activations=True)
        return measure_flops(lambda: model(x), modules=model)

    assert _interrupt_everywhere(run, boundaries, model) == 6  # three Ticking calls, two boundaries each


def test_an_interrupt_in_a_forward_hook_of_the_callers():
    boundaries = _Boundaries()
    model = _model(boundaries)
    x = torch.rand(3, 4)
    handles = [m.register_forward_hook(lambda *args: boundaries.tick()) for m in model.modules()]
    try:
        # hooks of the caller are not ours: assert_nothing_left would see them, so check around them
        flags = training_flags(model)
        boundaries.armed = None
        expected = crawl_module(model, args=(x,))
        total = boundaries.count
        for k in range(1, total + 1):
            boundaries.count, boundaries.armed = 0, k
            with pytest.raises(KeyboardInterrupt):
                crawl_module(model, args=(x,))
            assert training_flags(model) == flags
            assert all(len(m._forward_hooks) == 1 for m in model.modules())
            assert all("forward" not in vars(m) for m in model.modules())
            assert torch._C._len_torch_dispatch_stack() == 0
        boundaries.count, boundaries.armed = 0, None
        assert crawl_module(model, args=(x,)) == expected
        assert total == 6 + 9  # the Ticking ticks and one hook per module (9 modules)
    finally:
        for handle in handles:
            handle.remove()
    assert_nothing_left(model)


def test_an_interrupt_in_a_custom_operator_formula():
    boundaries = _Boundaries()
    model = _model(boundaries)
    boundaries.armed = None
    x = torch.rand(3, 4)

    def relu_formula(*shapes, out_shape):
        boundaries.tick()
        return 0

    mapping = {torch.ops.aten.relu: relu_formula}
    total = _interrupt_everywhere(lambda: measure_flops(lambda: model(x), custom_mapping=mapping), boundaries, model)
    assert total == 6 + 3  # the forwards' ticks and one per relu call


def test_an_interrupt_in_a_custom_module_handler():
    boundaries = _Boundaries()
    model = _model(boundaries)
    x = torch.rand(3, 4)

    def estimate(call):
        boundaries.tick()
        return {"module_flops": 1}

    handlers = {nn.Linear: ModuleHandler(estimate)}
    total = _interrupt_everywhere(lambda: crawl_module(model, args=(x,), custom_modules=handlers), boundaries, model)
    assert total == 6 + 2  # the forwards' ticks and one per Linear call
