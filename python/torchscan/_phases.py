"""The optimizer phase of a training step: global optimizer step hooks around a workload.

The phases of a training step (forward, backward, optimizer) are told apart in C
(``include/torchscan/phase.h``, ``src/ext/phase.c``) from what PyTorch says about the
running operator. The autograd engine answers for the backward by itself; the optimizer
step is marked by the global step hooks this context registers, removed on the way out,
also when the workload raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook


@contextmanager
def optimizer_step_hooks(observer: Any) -> Iterator[None]:
    """Calls ``observer._optimizer_step_pre`` / ``_optimizer_step_post`` around every ``Optimizer.step`` of the block.

    Both are called as global optimizer step hooks, ``(optimizer, args, kwargs)``, and return None.
    """
    pre = register_optimizer_step_pre_hook(observer._optimizer_step_pre)
    try:
        post = register_optimizer_step_post_hook(observer._optimizer_step_post)
        try:
            yield
        finally:
            post.remove()
    finally:
        pre.remove()
