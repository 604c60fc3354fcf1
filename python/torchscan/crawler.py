"""Model analysis from one evaluation forward: ``crawl_module`` and ``summary``."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Mapping
from contextlib import nullcontext
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

import torch
from torch import nn

from . import _engine
from ._distributed import context_fields
from .extensions import ModuleCall, ModuleHandler, _validate_custom_modules
from .flops import _check_custom_mapping, _OperatorCounter, counting
from .modules import module_dmas, module_flops, module_macs, module_rf  # noqa: F401  (0.2.0's crawler names)
from .report import AnalysisReport, IncompleteAnalysisError, _check_flag
from .utils import aggregate_info, format_info  # noqa: F401  (0.2.0's crawler names)

__all__ = ["crawl_module", "summary"]


@cache
def _package_version() -> str:
    try:
        return version("torchscan")
    except PackageNotFoundError:
        return "unknown"


def _model_defaults(module: nn.Module) -> tuple[torch.device, torch.dtype]:
    tensor = next(module.parameters(), None)
    if tensor is None:
        tensor = next(module.buffers(), None)
    if tensor is None:
        return torch.device("cpu"), torch.float32
    return tensor.device, tensor.dtype


def _target_device(device: Any) -> torch.device:
    """``device`` as a torch.device that exists in this process, or a clear error naming the argument."""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}.")
    try:
        target = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device {device!r} is not a device name: {error}") from None
    if target.type in ("cpu", "meta"):
        return target
    if target.type in ("cuda", "mps"):
        from ._timing import _timing_target  # the measurement functions' check (contract 1.8); _timing imports us

        try:
            _timing_target(target)
        except RuntimeError as error:
            raise RuntimeError(f"device {device!r}: {error}") from None
        return target
    try:  # other backends (xla, privateuse1, ...): ask PyTorch with an empty tensor
        torch.empty(0, device=target)
    except Exception as error:  # noqa: BLE001 - any failure means the device cannot hold the inputs
        raise RuntimeError(f"device {device!r} cannot hold tensors here: {type(error).__name__}: {error}") from None
    return target


def _generated_inputs(
    module: nn.Module,
    input_shape: Any,
    dtype: Any,
    device: Any,
) -> tuple[Any, ...]:
    shapes = input_shape if isinstance(input_shape, list) else [input_shape]
    if not shapes or any(not isinstance(shape, tuple) for shape in shapes):
        raise TypeError("input_shape must be a tuple or a non-empty list of tuples.")
    if any(not isinstance(dim, int) or isinstance(dim, bool) for shape in shapes for dim in shape):
        raise TypeError("Every input_shape dimension must be an integer.")
    negative = [shape for shape in shapes if any(dim < 0 for dim in shape)]
    if negative:
        raise ValueError(f"input_shape dimensions must be >= 0, got {negative[0]!r}.")
    default_device, default_dtype = _model_defaults(module)
    target = default_device if device is None else _target_device(device)
    if dtype is None:
        dtypes = [default_dtype] * len(shapes)
    elif isinstance(dtype, torch.dtype):
        dtypes = [dtype] * len(shapes)
    else:
        if isinstance(dtype, (str, bytes)) or not isinstance(dtype, Iterable):
            raise TypeError("dtype must be a torch.dtype or an iterable of torch.dtype.")
        dtypes = list(dtype)
        if len(dtypes) != len(shapes):
            raise ValueError("dtype length must match the number of input shapes.")
        if any(not isinstance(item, torch.dtype) for item in dtypes):
            raise TypeError("Every dtype value must be a torch.dtype.")
    inputs = []
    for shape, current in zip(shapes, dtypes, strict=True):
        if current == torch.bool:
            inputs.append(torch.ones(1, *shape, device=target, dtype=current))
        elif not current.is_floating_point and not current.is_complex:
            inputs.append(torch.zeros(1, *shape, device=target, dtype=current))
        else:
            inputs.append(torch.rand(1, *shape, device=target).to(dtype=current))
    return tuple(inputs)


def _prepare(
    module: Any,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    strict: Any,
    mode: Any,
    custom_mapping: Any,
) -> tuple[tuple[Any, ...], dict[str, Any], str, dict[Any, Any] | None]:
    """Validates every argument before anything runs."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}.")
    # the reference takes any truthy value; 0 and 1 stay accepted, "yes" or None are mistakes
    _check_flag("strict", strict)
    if mode not in ("full", "structure"):
        raise ValueError("mode must be 'full' or 'structure'.")
    mapping = _check_custom_mapping(custom_mapping)
    provided = args is not None or kwargs is not None
    if provided == (input_shape is not None):
        raise ValueError("Exactly one of input_shape or args/kwargs must be provided.")
    if not provided:
        return _generated_inputs(module, input_shape, dtype, device), {}, "generated", mapping
    if dtype is not None or device is not None:
        raise ValueError("dtype and device apply only to generated input_shape tensors.")
    if args is not None and not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {type(args).__name__}.")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping, got {type(kwargs).__name__}.")
    call_kwargs = {} if kwargs is None else dict(kwargs)
    if any(not isinstance(name, str) for name in call_kwargs):
        raise TypeError("kwargs keys must be strings.")
    return (() if args is None else args), call_kwargs, "provided", mapping


def crawl_module(
    module: nn.Module,
    input_shape: list[tuple[int, ...]] | tuple[int, ...] | None = None,
    dtype: torch.dtype | Iterable[torch.dtype] | None = None,
    *,
    args: tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    device: str | torch.device | None = None,
    strict: bool = False,
    mode: Literal["full", "structure"] = "full",
    custom_modules: Mapping[type[nn.Module], ModuleHandler] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int | float]] | None = None,
    saved_activations: bool = False,
) -> AnalysisReport:
    """Analyse one evaluation forward of ``module`` and return a JSON-serializable report.

    Give exactly one input source: ``input_shape`` (tensors generated with a
    batch dimension of 1, on the model's device and dtype unless ``dtype`` or
    ``device`` say otherwise) or ``args``/``kwargs`` (forwarded unchanged: same
    objects, never cloned or moved).

    The forward runs once under ``torch.no_grad()`` with every module in eval
    mode; hooks are removed and every training flag restored afterwards, also
    when the forward raises (its exception propagates). In ``mode="full"`` the
    report holds module-formula FLOPs/MACs/DMAs per layer call and the operator
    FLOPs of the same forward; ``mode="structure"`` records shapes, calls,
    parameters and buffers only.

    Args:
        strict: raise :class:`IncompleteAnalysisError` (carrying ``.report``)
            when any diagnostic exists or a requested total is not complete.
        custom_modules: ``{ModuleType: ModuleHandler(callback, subtree_metrics=...)}``:
            estimates for modules of those types (the closest class in the MRO
            wins); see :mod:`torchscan.extensions`. Validated before the model
            runs; handlers run once per successful call, with operator
            counting suspended.
        custom_mapping: operator-packet formula overrides for this call.
        mode: ``"full"`` (default) or ``"structure"`` (see above).
        saved_activations: measure the bytes autograd saves for backward
            (a bool; default False). The forward then runs as a *training
            forward*: under ``torch.enable_grad()``, with every module in the
            training flag the caller set (call ``module.train()`` first for
            dropout and batch-norm training behaviour; running statistics
            are then updated, as in any training forward); flags are still
            restored afterwards. Each row gets
            ``metrics.saved_activation_bytes`` (the storages first saved
            while that call was the innermost one, each counted once, in
            full; parameters and buffers excluded) and ``totals`` their sum;
            ``context.execution_mode`` is ``"training_forward_grad_enabled"``.
            See docs/methodology.md.

    Returns:
        the :class:`AnalysisReport`.

    Raises:
        ValueError, TypeError: bad arguments, before the model runs: a
            negative ``input_shape`` dimension, a device name PyTorch does not
            know, a ``strict`` that is not a bool (0 and 1 are accepted), a
            ``saved_activations`` that is not a bool, ...
        RuntimeError: a ``device`` this process cannot use (``"cuda:7"``
            without that GPU, CUDA or MPS unavailable), before the model runs;
            ``saved_activations=True`` under ``torch.inference_mode()``;
            a ``module`` (or one of its submodules) that another TorchScan
            call observes at the same time, in any thread.
    """
    if type(saved_activations) is not bool:
        raise TypeError(f"saved_activations must be a bool, got {saved_activations!r}.")
    if saved_activations and torch.is_inference_mode_enabled():
        # autograd records nothing under inference mode, whatever the grad mode: every row would read 0
        raise RuntimeError("saved_activations=True needs autograd, which torch.inference_mode() turns off.")
    return _crawl(
        module,
        input_shape,
        dtype,
        args,
        kwargs,
        device,
        strict,
        mode,
        custom_modules,
        custom_mapping,
        saved=saved_activations,
    )


def _crawl(
    module: nn.Module,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    strict: bool,
    mode: str,
    custom_modules: Any,
    custom_mapping: Any,
    table_depth: int | None = None,
    saved: bool = False,
) -> AnalysisReport:
    """crawl_module's body; ``table_depth``: summary's max_depth, refused before the forward when no module
    is that deep; ``saved``: saved_activations (a training forward with the saved-tensor hooks)."""
    call_args, call_kwargs, source, mapping = _prepare(
        module, input_shape, dtype, args, kwargs, device, strict, mode, custom_mapping
    )
    handlers = _validate_custom_modules(custom_modules)
    model_type = f"{type(module).__module__}.{type(module).__qualname__}"
    model_type.encode()  # UnicodeEncodeError before the forward, as for a module name UTF-8 cannot encode (Crawl)
    full = mode == "full"
    ranked = context_fields()  # rank, world_size, ... inside a torch.distributed process group, else {}
    # local=True: rows and totals record the part of sharded tensors this rank holds
    crawl = _engine.Crawl(module, full, handlers, ModuleCall if handlers else None, bool(ranked), saved=saved)
    if table_depth is not None and table_depth > crawl.depth():
        # the table's own check, made before the model runs
        raise ValueError("The `max_depth` argument cannot be higher than module depth.")
    counter = _OperatorCounter(mapping) if full else None
    training_before = module.training
    try:
        # inside the try: a Ctrl-C that lands as install returns still uninstalls
        # saved: the caller's training flags stay (evaluate=False), grad on, the pack hook measures
        crawl.install(counter, not saved)
        with (
            torch.enable_grad() if saved else torch.no_grad(),
            torch.autograd.graph.saved_tensors_hooks(crawl.saved_pack, crawl.saved_unpack)
            if saved
            else nullcontext(),
        ):
            if counter is not None:
                with counting(counter):
                    module(*call_args, **call_kwargs)
            else:
                module(*call_args, **call_kwargs)
    finally:
        crawl.uninstall()
    context = {
        "torchscan_version": _package_version(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "model_type": model_type,
        "execution_mode": "training_forward_grad_enabled" if saved else "evaluation_no_grad",
        "training_before": training_before,
    }
    context.update(ranked)
    report: AnalysisReport = crawl.report(context, source, call_args, call_kwargs, counter, torch.__version__)
    if ranked:
        report["operator_flops"]["context"].update(ranked)
    if strict:
        incomplete, message = _engine.incomplete(report)
        if incomplete:
            raise IncompleteAnalysisError(report, message)
    return report


def summary(
    module: nn.Module,
    input_shape: list[tuple[int, ...]] | tuple[int, ...] | None = None,
    wrap_mode: str | None = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    *,
    dtype: torch.dtype | Iterable[torch.dtype] | None = None,
    args: tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    device: str | torch.device | None = None,
    strict: bool = False,
    mode: Literal["full", "structure"] = "full",
    custom_modules: Mapping[type[nn.Module], ModuleHandler] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int | float]] | None = None,
) -> AnalysisReport:
    """Print the summary table of :func:`crawl_module` and return its full report.

    ``max_depth`` limits the printed rows (the returned report is complete);
    ``wrap_mode`` ("mid", "end" or None) shortens long layer names;
    ``receptive_field`` and ``effective_rf_stats`` add receptive-field columns.

    Args:
        module, input_shape, dtype, args, kwargs, device, strict, mode,
        custom_modules, custom_mapping: as in :func:`crawl_module` (every
            argument after ``effective_rf_stats`` is keyword only).
        wrap_mode: "mid" (default), "end" or None.
        max_depth: the deepest rows printed, an int >= 0 or None (default: all).
        receptive_field: add the receptive-field column (a bool, 0 and 1
            accepted; default False).
        effective_rf_stats: add effective stride and padding columns (a bool,
            0 and 1 accepted; default False).

    Returns:
        the full :class:`AnalysisReport` (the table is printed to stdout).

    Raises:
        ValueError: unknown ``wrap_mode``, negative ``max_depth`` or one deeper
            than the model, before the model runs where possible.
        TypeError: ``max_depth`` not an int or None, ``receptive_field`` or
            ``effective_rf_stats`` not a bool (0 and 1 accepted), before the
            model runs.
        ValueError, TypeError, RuntimeError: the other arguments, as in
            :func:`crawl_module`, before the model runs.
    """
    if wrap_mode not in ("mid", "end", None):
        raise ValueError("wrap_mode must be 'mid', 'end' or None.")
    if max_depth is not None and (not isinstance(max_depth, int) or isinstance(max_depth, bool)):
        raise TypeError("max_depth must be an int or None.")
    if isinstance(max_depth, int) and max_depth < 0:
        raise ValueError("max_depth must be non-negative.")
    receptive_field = _check_flag("receptive_field", receptive_field)
    effective_rf_stats = _check_flag("effective_rf_stats", effective_rf_stats)
    report = _crawl(
        module, input_shape, dtype, args, kwargs, device, strict, mode, custom_modules, custom_mapping, max_depth
    )
    print(  # noqa: T201 - printing the table is this function's job
        _engine.format_summary(
            report,
            wrap_mode,
            receptive_field,
            effective_rf_stats,
            -1 if max_depth is None else max_depth,
        )
    )
    return report
