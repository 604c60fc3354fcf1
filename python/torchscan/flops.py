"""Operator FLOPs observed through PyTorch's dispatcher (``measure_flops``)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NotRequired, TypedDict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _engine
from ._distributed import context_fields
from ._phases import optimizer_step_hooks
from .report import Diagnostic, MetricResult

__all__ = ["FlopReport", "measure_flops"]

METHOD: str = _engine.OPERATOR_METHOD


class FlopReport(TypedDict):
    """Operator FLOPs of one workload call (``counting_convention`` torchscan_flops_v1)."""

    schema_version: int
    context: dict[str, Any]
    total: MetricResult
    by_module: dict[str, int]
    by_operator: dict[str, int]
    matrix_product_flops: dict[str, int]
    ignored_operators: dict[str, dict[str, Any]]
    diagnostics: list[Diagnostic]
    phases: NotRequired[dict[str, dict[str, Any]]]


class _OperatorCounter(_engine.Counter, TorchDispatchMode):
    """A real TorchDispatchMode whose ``__torch_dispatch__`` is the C counter.

    Being a genuine TorchDispatchMode subclass lets it compose with
    FakeTensorMode and other modes on the stack. Higher-order operators
    (``torch.cond``, ``flex_attention``, ...) reach it too; the C counter
    decides what of them it can count.
    """

    supports_higher_order_operators = True

    @staticmethod
    @torch._disable_dynamo(recursive=True)
    def _call_outside_dynamo(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        # The C counter runs a higher-order operator it cannot enter through
        # this: outside torch.compile, as if our __torch_dispatch__ were Python.
        return fn(*args, **(kwargs or {}))

    def __init__(self, custom_mapping: dict[Any, Callable[..., Any]] | None = None) -> None:
        TorchDispatchMode.__init__(self)
        self._configure(custom_mapping)

    def report(
        self, by_module: dict[str, int] | None = None, by_phase: dict[str, Any] | None = None
    ) -> FlopReport:
        report: FlopReport = self._report(torch.__version__, METHOD, by_module, by_phase)
        report["context"].update(context_fields())  # rank, world_size, ... inside a process group
        return report


@contextlib.contextmanager
def counting(counter: _OperatorCounter) -> Iterator[_OperatorCounter]:
    """``with counter:`` that leaves no mode behind when entering fails.

    PyTorch may push the mode and then fail: a failed allocation in
    ``_push_on_torch_dispatch_stack`` returns with a MemoryError set, which
    CPython's direct call of a builtin does not check, so the error surfaces
    where a caller checks a result. A ``with`` whose ``__enter__`` raised
    never calls ``__exit__``. Here the call goes through functools.partial,
    whose call checks the result (SystemError raised here), and a mode
    pushed before the failure is popped again. Not a method of the mode:
    torch.compile traces a mode's own ``__enter__``.
    """
    depth = torch._C._len_torch_dispatch_stack()
    try:
        functools.partial(TorchDispatchMode.__enter__, counter)()
    except BaseException:
        if torch._C._len_torch_dispatch_stack() > depth:
            counter.__exit__(None, None, None)
        raise
    try:
        yield counter
    finally:
        counter.__exit__(None, None, None)


def _check_custom_mapping(custom_mapping: Mapping[Any, Callable[..., Any]] | None) -> dict[Any, Any] | None:
    if custom_mapping is None:
        return None
    if not isinstance(custom_mapping, Mapping):
        raise TypeError(f"custom_mapping must be a mapping, got {type(custom_mapping).__name__}.")
    checked: dict[Any, Any] = {}
    for key, formula in custom_mapping.items():
        if isinstance(key, torch._ops.OpOverload):
            raise TypeError(
                f"custom_mapping keys must be operator packets such as torch.ops.aten.sin, "
                f"not overloads such as {key}."
            )
        if not isinstance(key, torch._ops.OpOverloadPacket):
            raise TypeError(
                f"custom_mapping keys must be operator packets such as torch.ops.aten.sin, got {key!r}."
            )
        if not callable(formula):
            raise TypeError(f"custom_mapping[{key}] must be callable.")
        checked[key] = formula
    return checked


def measure_flops(
    workload: Callable[[], Any],
    *,
    modules: torch.nn.Module | list[torch.nn.Module] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int | float]] | None = None,
) -> FlopReport:
    """Count the operator FLOPs of one call of ``workload``.

    The workload is called exactly once inside TorchScan's operator counter, a
    ``TorchDispatchMode`` whose body is C. Every aten operator it runs is
    counted with its formula, listed as ignored (views, copies, allocation),
    or reported with an ``uncounted_operator`` diagnostic, in which case the
    total is ``partial`` (a lower bound).

    Args:
        workload: zero-argument callable; its exceptions propagate unchanged.
        modules: a module (or list of modules) to attribute FLOPs to:
            ``by_module`` maps each called module's path to the operator FLOPs
            of its own work (its child modules excluded), summed over its
            calls, so the entries add up to the FLOPs counted inside these
            modules. Training flags are left as they are.
        custom_mapping: ``{torch.ops.aten.<op>: formula}`` overriding our formula
            for that operator packet during this call only. A formula receives
            shapes like FlopCounterMode's (``*arg_shapes, out_shape=...``) and
            returns a whole number of FLOPs (an int, or a float such as 12.0);
            a fraction is an ``unsupported_operator_formula`` diagnostic.

    A workload that runs a training step (forward, ``backward()``, an
    optimizer's ``step()``) is told apart in ``phases``: ``forward``,
    ``backward`` and ``optimizer``, whose totals add up to ``total``.
    ``backward`` is what the autograd engine ran (AccumulateGrad and
    backward hooks included), ``optimizer`` what ran inside
    ``torch.optim.Optimizer.step`` (global step hooks, removed afterwards),
    ``forward`` the rest (the model's forward, the loss, ``zero_grad``).
    With ``modules``, each phase also has ``by_module`` and ``layers``
    (``(path, call_index)`` rows); backward operators count for the layer
    call whose forward they differentiate.

    Returns:
        a :class:`FlopReport`.

    Raises:
        TypeError: non-callable workload, ``modules`` that is not a module or
            a non-empty list of modules, ``custom_mapping`` that is not a
            mapping of operator packets (overloads refused) to callables (all
            raised before the workload runs).
        RuntimeError: ``modules`` that another TorchScan call observes at the
            same time, in any thread (before the workload runs).
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    mapping = _check_custom_mapping(custom_mapping)
    crawl = None
    if modules is not None:
        mods = modules if isinstance(modules, list) else [modules]
        if not mods or any(not isinstance(m, torch.nn.Module) for m in mods):
            raise TypeError("modules must be an nn.Module or a non-empty list of nn.Module.")
        # One module: its own paths ("" is the module itself). Several: a
        # ModuleList view numbers them ("0.layer1", "1", ...); the modules
        # are not changed.
        root = mods[0] if len(mods) == 1 else torch.nn.ModuleList(mods)
        crawl = _engine.Crawl(root, False)
    counter = _OperatorCounter(mapping)
    try:
        # inside the try: a Ctrl-C that lands as install returns still uninstalls
        if crawl is not None:
            crawl.install(counter, False)  # observe only: no eval(), no flag change
        with optimizer_step_hooks(counter), counting(counter):
            workload()
    finally:
        if crawl is not None:
            crawl.uninstall()
    if crawl is None:
        return counter.report()
    return counter.report(crawl.operator_flops_by_path(), crawl.operator_flops_by_phase())
