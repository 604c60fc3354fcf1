"""Memory planning without the hardware: ``estimate_memory`` simulates the tensor memory of one workload call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NotRequired, TypedDict

import torch
from torch.overrides import TorchFunctionMode

from .flops import _OperatorCounter, counting
from ._phases import optimizer_step_hooks
from . import _engine
from .report import Diagnostic, MetricResult, _check_flag

__all__ = ["MemoryReport", "estimate_memory"]

_ATTENTION = ("as_run", "fused")
_KIND_MODULE, _KIND_OPTIMIZER = 0, 1


class MemoryReport(TypedDict):
    """The simulated tensor memory of one workload call (``estimate_memory``).

    ``totals.peak_bytes``: the largest number of bytes of tensor storages the
    workload allocated and still held at once (the scope of
    ``measure_peak_memory`` on CPU); ``totals.resident_peak_bytes``: the
    largest number of bytes of all live storages, those that existed before
    the call included. ``peak`` and ``resident_peak`` say when (operator,
    phase, layer call) and what was live then (``composition`` by role,
    ``allocated_composition`` of the workload's own, ``by_device``).
    """

    schema_version: int
    context: dict[str, Any]
    totals: dict[str, MetricResult]
    peak: dict[str, Any] | None
    resident_peak: dict[str, Any] | None
    phases: dict[str, dict[str, int]]
    existing_bytes: int
    allocated_bytes: int
    freed_bytes: int
    operators: int
    storages: int
    events: int
    unobserved: int
    diagnostics: list[Diagnostic]
    layers: NotRequired[list[dict[str, Any]]]
    timeline: NotRequired[list[dict[str, Any]]]


class _FusedAttention(TorchFunctionMode):
    """Runs ``scaled_dot_product_attention`` as one fused kernel: its outputs (the attention output and the
    float32 log-sum-exp it saves for backward) and nothing else, where SDPA's math path (meta, some CPU
    cases) would materialise the attention matrix. The kernel is ``_scaled_dot_product_flash_attention_for_cpu``
    (it has meta and fake kernels and a backward); grouped-query key/value heads are repeated first, as the
    math path does."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is not torch.nn.functional.scaled_dot_product_attention:
            return func(*args, **kwargs)
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        q, k, v = bound["query"], bound["key"], bound["value"]
        if q.device.type not in ("cpu", "meta") or q.dim() != 4:
            return func(*args, **kwargs)
        if bound.get("enable_gqa") and k.shape[1] != q.shape[1]:
            k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
            v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q,
            k,
            v,
            float(bound.get("dropout_p", 0.0)),
            bool(bound.get("is_causal", False)),
            attn_mask=bound.get("attn_mask"),
            scale=bound.get("scale"),
        )
        return out


def _modules(modules: object) -> list[torch.nn.Module] | None:
    if modules is None:
        return None
    mods = modules if isinstance(modules, list) else [modules]
    if not mods or any(not isinstance(m, torch.nn.Module) for m in mods):
        raise TypeError("modules must be an nn.Module or a non-empty list of nn.Module.")
    return mods


def _optimizers(optimizers: object) -> list[torch.optim.Optimizer]:
    if optimizers is None:
        return []
    if isinstance(optimizers, torch.optim.Optimizer):
        return [optimizers]
    if isinstance(optimizers, (str, bytes)) or not isinstance(optimizers, Sequence):
        raise TypeError("optimizers must be a torch.optim.Optimizer or a sequence of them.")
    opts = list(optimizers)
    if any(not isinstance(o, torch.optim.Optimizer) for o in opts):
        raise TypeError("optimizers must be a torch.optim.Optimizer or a sequence of them.")
    return opts


@contextlib.contextmanager
def _attention(mode: str) -> Iterator[None]:
    if mode == "fused":
        with _FusedAttention():
            yield
    else:
        yield


def estimate_memory(
    workload: Callable[[], Any],
    *,
    modules: torch.nn.Module | list[torch.nn.Module] | None = None,
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
    attention: Literal["as_run", "fused"] = "as_run",
    timeline: bool = False,
) -> MemoryReport:
    """Simulate the tensor memory of one call of ``workload``: a model of memory, not a measurement.

    The workload runs once, on whatever tensors it builds: real ones, meta
    tensors or ``FakeTensorMode`` tensors (a 70B model on ``meta`` costs no
    memory). TorchScan's operator counter (a ``TorchDispatchMode`` whose body
    is C) sees every aten operator; the C simulator replays what they do to
    tensor storages, reading nothing from an allocator:

    * an output whose untyped storage was not seen before is allocated by
      that operator (its ``nbytes``); views share their base's storage and
      in-place operators return a known one, so they allocate nothing;
    * a storage is freed when its last reference goes (a weak reference to
      the storage object, as PyTorch's MemTracker does): autograd's saved
      tensors, activation checkpointing's recomputation, ``zero_grad``
      (``set_to_none`` drops the gradients; ``False`` zeroes them in place)
      and foreach or fused optimizers are simulated as they run;
    * a storage an operator reads that was not seen before existed before the
      call (parameters, inputs): resident from the start, never part of
      ``peak_bytes``.

    Composite operators run whole while simulating (not decomposed into the
    operators their kernels avoid). Dtypes and autocast are what the workload
    does. Not modelled: allocator rounding and fragmentation (CUDA's caching
    allocator reserves more), kernels' workspaces and internal temporaries
    (cuBLAS, cuDNN, oneDNN's convolution buffers), communication buffers
    (NCCL), the CUDA context, tensors made outside the dispatcher (the RNG
    state that checkpointing saves). One kernel workspace is modelled, where
    it is documented: CPU ``slow_conv2d``'s im2col buffer (role
    ``workspace``, on real CPU tensors with oneDNN off: with it on, float
    convolutions run through oneDNN, whose buffers are not modelled).

    Roles at the peaks: ``parameter`` and ``gradient`` (of ``modules`` and of
    every optimizer that steps or is given), ``optimizer_state`` (tensors in
    an optimizer's ``state``, AdamW's per-parameter ``step`` scalars
    included), ``activation`` (allocated in the forward phase), ``temporary``
    (allocated in the backward or optimizer phase, not a gradient or state),
    ``other`` (existed before the call, not named: inputs, buffers),
    ``workspace`` (a kernel's modelled buffer). Phases
    (forward, backward, optimizer) are those of :func:`measure_flops`.

    Args:
        workload: zero-argument callable; its exceptions propagate unchanged.
        modules: a module (or non-empty list) whose parameters and gradients
            are named, and whose layer calls ``(path, call_index)`` locate
            the peaks (a backward operator: the layer call whose forward it
            differentiates).
        optimizers: an optimizer or a sequence of them whose state existing
            before the call is named (an optimizer that steps in the workload
            is named at its step anyway).
        attention: ``"as_run"`` (default): scaled-dot-product attention
            allocates what the kernel PyTorch picks allocates (on meta the
            math path, which materialises the attention matrix);
            ``"fused"``: as a fused kernel (output and float32 log-sum-exp
            only) on CPU and meta tensors.
        timeline: add ``timeline``, every allocation and free in order.

    Returns:
        a :class:`MemoryReport`; its totals are ``complete``, ``partial`` (a
        lower bound: some tensor's storage could not be read, with an
        ``unobserved_storage`` diagnostic) or ``unavailable`` (no operator
        ran under the simulator, with a ``measurement_unavailable``
        diagnostic).

    Raises:
        TypeError: non-callable workload, ``modules`` that is not a module or
            non-empty list of modules, ``optimizers`` that are not
            optimizers, ``timeline`` not a bool (before the workload runs).
        ValueError: ``attention`` not ``"as_run"`` or ``"fused"`` (before the
            workload runs).
        RuntimeError: ``modules`` that another TorchScan call observes at the
            same time (before the workload runs).
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    mods = _modules(modules)
    opts = _optimizers(optimizers)
    if attention not in _ATTENTION:
        raise ValueError(f"attention must be one of {list(_ATTENTION)}, got {attention!r}.")
    want_timeline = _check_flag("timeline", timeline)
    crawl = None
    if mods is not None:
        root = mods[0] if len(mods) == 1 else torch.nn.ModuleList(mods)
        # saved=True: the crawl's saved-tensor hooks measure what autograd saves (saved.h), as crawl_module's
        crawl = _engine.Crawl(root, False, saved=True)
    counter = _OperatorCounter()
    counter._simulate_memory()
    try:
        if mods is not None:
            for mod in mods:
                counter._memory_name(mod, _KIND_MODULE)
        for opt in opts:
            counter._memory_name(opt, _KIND_OPTIMIZER)
        try:
            if crawl is not None:
                crawl.install(counter, False)  # observe only: no eval(), no flag change
            with (
                optimizer_step_hooks(counter),
                _attention(attention),
                counting(counter),
                torch.autograd.graph.saved_tensors_hooks(crawl.saved_pack, crawl.saved_unpack)
                if crawl is not None
                else contextlib.nullcontext(),
            ):
                workload()
            # the roles at the end (gradients made by this backward, state made by this step)
            if mods is not None:
                for mod in mods:
                    counter._memory_name(mod, _KIND_MODULE)
            for opt in opts:
                counter._memory_name(opt, _KIND_OPTIMIZER)
            # while layer calls can still be named; the saved activations come from the crawl's session
            report = counter._memory_report(want_timeline, attention, torch.__version__)
        finally:
            if crawl is not None:
                crawl.uninstall()
    finally:
        counter._memory_end()
    return report  # type: ignore[no-any-return]

