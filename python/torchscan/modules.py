"""Module formulas of one call: ``module_flops``, ``module_macs``, ``module_dmas`` and ``module_rf``.

The low-level functions of TorchScan 0.2.0's ``torchscan.modules``, with its signatures. They run the same C
formulas as :func:`torchscan.crawl_module` (``_engine.module_estimates``: the module is described by the crawl's
readers and the call by its first input and output tensors), so each returns the number ``crawl_module`` reports
for that module call, taking the module's own ``training`` flag (a crawl runs in eval mode). Where a family's
numbers differ from 0.2.0's, ``docs/module-formulas.md`` ("torchscan.modules and 0.2.0") says which and why.

These functions return bare numbers: a report's statuses and diagnostics are :func:`torchscan.crawl_module`'s.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from . import _engine

__all__ = ["module_dmas", "module_flops", "module_macs", "module_rf"]

_ERRORS: dict[str, type[Exception]] = {
    "NotImplementedError": NotImplementedError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "ZeroDivisionError": ZeroDivisionError,
}


def _estimates(module: nn.Module, inputs: Any, out: Any) -> dict[str, tuple[str, Any, str]]:
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, not {type(module).__name__}")
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    estimates = _engine.module_estimates(module, args, {}, out)
    if estimates is None:
        raise ValueError("The module call did not expose both an input and output tensor.")
    return estimates


def _number(estimate: tuple[str, Any, str]) -> int | float | None:
    kind, value, message = estimate
    if kind == "complete":
        return value
    if kind == "unsupported":
        warnings.warn(message, stacklevel=3)
        return 0
    if kind == "not_applicable":
        return None
    name, _, text = message.partition(": ")
    raise _ERRORS.get(name, RuntimeError)(text if name in _ERRORS else message)


def module_flops(module: nn.Module | Callable[..., torch.Tensor], inputs: tuple[Any, ...], out: Any) -> int:
    """Estimate the floating point operations of one module call with TorchScan's module formulas.

    Args:
        module: the PyTorch module that was called
        inputs: the positional arguments of the call (a tensor alone is taken as a one-element tuple)
        out: what the call returned
    Returns:
        the FLOPs of the call, as ``crawl_module`` reports them for it (``layer["metrics"]["module_flops"]``)

    A module type without a formula warns ``"Module type not supported: <Type>"`` (a ``UserWarning``) and returns
    0, as TorchScan 0.2.0 does: that 0 is then only a lower bound, not a count (``crawl_module`` reports it as a
    partial metric with an ``unsupported_module_metric`` diagnostic). A formula that cannot apply to the call (for
    instance a complex or sparse input) raises the error ``crawl_module`` records as ``module_metric_error``
    (``NotImplementedError`` or ``ValueError``). A call without an input or output tensor raises ``ValueError``.

    Raises:
        TypeError: ``module`` is not an ``nn.Module``.
        ValueError: ``inputs``/``out`` hold no input or no output tensor, or the formula cannot apply.
        NotImplementedError: the formula cannot apply to the call (e.g. a complex or sparse input).
    """
    return _number(_estimates(module, inputs, out)["module_flops"])


def module_macs(module: nn.Module, inp: torch.Tensor, out: torch.Tensor) -> int:
    """Estimate the multiply-accumulate operations of one module call with TorchScan's module formulas.

    Args:
        module: the PyTorch module that was called
        inp: the input of the call (a tuple is taken as all of its positional arguments)
        out: the output of the call
    Returns:
        the MACs of the call, as ``crawl_module`` reports them (``layer["metrics"]["macs"]``)

    Unsupported module types warn and return 0, a lower bound only; see :func:`module_flops` and use
    :func:`torchscan.crawl_module` for statuses and diagnostics.

    Raises:
        TypeError, ValueError, NotImplementedError: as :func:`module_flops` (``inp`` in place of ``inputs``).
    """
    return _number(_estimates(module, inp, out)["macs"])


def module_dmas(module: nn.Module, inp: torch.Tensor, out: torch.Tensor) -> int:
    """Estimate the direct memory accesses of one module call with TorchScan's module formulas.

    Implementation overheads are neglected: the count is that of the logical reads and writes.

    Args:
        module: the PyTorch module that was called
        inp: the input of the call (a tuple is taken as all of its positional arguments)
        out: the output of the call
    Returns:
        the DMAs of the call, as ``crawl_module`` reports them (``layer["metrics"]["dmas"]``)

    Unsupported module types warn and return 0, a lower bound only; see :func:`module_flops` and use
    :func:`torchscan.crawl_module` for statuses and diagnostics.

    Raises:
        TypeError, ValueError, NotImplementedError: as :func:`module_flops` (``inp`` in place of ``inputs``).
    """
    return _number(_estimates(module, inp, out)["dmas"])


def module_rf(module: nn.Module, inp: torch.Tensor, out: torch.Tensor) -> tuple[float, float, float]:
    """Estimate the receptive field of one module call along its first spatial axis.

    Args:
        module: the PyTorch module that was called
        inp: the input of the call (a tuple is taken as all of its positional arguments)
        out: the output of the call
    Returns:
        (receptive field, effective stride, effective padding), as ``crawl_module`` reports them
        (``receptive_field``, ``effective_stride``, ``effective_padding``)

    An unsupported module type warns ``"Module type not supported: <Type>"`` and returns ``(1.0, 1.0, 0.0)`` as
    TorchScan 0.2.0 does: that is a placeholder, not a measurement (``crawl_module`` reports the three metrics as
    unavailable). A family for which a spatial receptive field means nothing (attention, embeddings, GLU,
    GroupNorm, layout modules) returns ``(None, None, None)``, as ``crawl_module`` reports them unavailable.

    Raises:
        TypeError, ValueError, NotImplementedError: as :func:`module_flops` (``inp`` in place of ``inputs``).
    """
    estimates = _estimates(module, inp, out)
    trio = [estimates[key] for key in ("receptive_field", "effective_stride", "effective_padding")]
    if trio[0][0] == "unsupported":
        warnings.warn(trio[0][2], stacklevel=2)
        return 1.0, 1.0, 0.0
    values = [_number(estimate) for estimate in trio]
    return tuple(None if value is None else float(value) for value in values)  # type: ignore[return-value]
