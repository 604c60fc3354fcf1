"""Custom module estimates: ``crawl_module(..., custom_modules={Type: ModuleHandler(...)})``.

A handler supplies module-formula metrics (``module_flops``, ``macs``, ``dmas``,
``receptive_field``, ``effective_stride``, ``effective_padding``) for modules
of a type TorchScan has no formula for, or overrides ours. It never supplies
operator FLOPs: that is ``custom_mapping``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from torch import nn

from .report import MetricResult

__all__ = ["ModuleCall", "ModuleEstimates", "ModuleHandler"]

SUPPORTED_METRICS = frozenset(
    {"module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"}
)


@dataclass(frozen=True)
class ModuleCall:
    """One call of a module, as a handler sees it (borrowed, read-only).

    ``module`` is the called module; ``args`` and ``kwargs`` are the actual
    call arguments (defaults are not inserted); ``output`` is the complete
    output. The callback runs in the module's forward hook under
    ``torch.no_grad()``, with operator counting suspended, so tensor work it
    does is never counted.
    """

    module: nn.Module
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    output: Any


class ModuleEstimates(TypedDict, total=False):
    """Any subset of the six metrics. Each value is a number (complete), a
    MetricResult dict (keeps its status) or None (explicitly unavailable)."""

    module_flops: int | float | MetricResult | None
    macs: int | float | MetricResult | None
    dmas: int | float | MetricResult | None
    receptive_field: int | float | MetricResult | None
    effective_stride: int | float | MetricResult | None
    effective_padding: int | float | MetricResult | None


@dataclass(frozen=True)
class ModuleHandler:
    """Estimates for one module type.

    Args:
        estimate: called once per successful call of a matching module with a
            :class:`ModuleCall`; returns :class:`ModuleEstimates`.
        subtree_metrics: metrics whose estimate includes the work of the
            module's children: those children are then covered (their rows get
            ``metric_owners`` and no estimate of their own for these metrics).
    """

    estimate: Callable[[ModuleCall], ModuleEstimates]
    subtree_metrics: frozenset[str] = field(default_factory=frozenset)


def _validate_custom_modules(custom_modules: object) -> dict[type, ModuleHandler] | None:
    """Checks ``custom_modules`` and returns a snapshot (raises before anything runs)."""
    if custom_modules is None:
        return None
    if not isinstance(custom_modules, Mapping):
        raise TypeError(f"custom_modules must be a mapping, got {type(custom_modules).__name__}.")
    snapshot: dict[type, ModuleHandler] = {}
    for key, handler in custom_modules.items():
        if not isinstance(key, type) or not issubclass(key, nn.Module):
            raise TypeError(f"custom_modules keys must be nn.Module subclasses, got {key!r}.")
        if not isinstance(handler, ModuleHandler) or not callable(handler.estimate):
            raise TypeError(f"custom_modules[{key.__name__}] must be a ModuleHandler with a callable estimate.")
        subtree = handler.subtree_metrics
        if not isinstance(subtree, frozenset) or not subtree <= SUPPORTED_METRICS:
            raise ValueError(
                f"custom_modules[{key.__name__}].subtree_metrics must be a frozenset of "
                f"{', '.join(sorted(SUPPORTED_METRICS))}."
            )
        snapshot[key] = handler
    return snapshot
