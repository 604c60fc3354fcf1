"""One call that assembles selected workload measurements (``measure_workload``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import math

import torch

from . import _engine
from ._progress import pass_line
from ._timing import _TIMING, _benchmark_context, _describe, _timing_target, _validate_timing_settings
from .benchmark import BenchmarkReport, _timed_report
from .flops import measure_flops
from .process.memory import _PEAK_MEMORY, NoMemoryEventsError, measure_peak_memory
from .process.rss import _check_command, _check_startable, measure_peak_rss
from .profiler import profile_workload
from .report import Diagnostic, MetricResult, _check_flag, metric_result

__all__ = ["measure_workload"]

_METRICS = {
    "latency": _engine.WORKLOAD_LATENCY,
    "throughput": _engine.WORKLOAD_THROUGHPUT,
    "flops": _engine.WORKLOAD_FLOPS,
    "memory": _engine.WORKLOAD_MEMORY,
    "achieved_flops": _engine.WORKLOAD_ACHIEVED,
}

# Method of totals.peak_memory by backend: what measure_peak_memory uses.
_MEMORY_METHODS = {
    "cpu": "torch.profiler.allocation_events",
    "cuda": "torch.cuda.max_memory_reserved",
    "mps": "torch.accelerator.memory.max_memory_reserved",
}

# Collector limits that become a measurement_unavailable diagnostic.
_UNAVAILABLE = (NotImplementedError, ImportError, NoMemoryEventsError)


class _Tracked:
    """The workload, remembering the last exception it raised: an exception of
    the workload itself always propagates, even when its type is one that a
    collector limit would turn into a diagnostic."""

    __slots__ = ("raised", "workload")

    def __init__(self, workload: Callable[[], Any]) -> None:
        self.workload = workload
        self.raised: BaseException | None = None

    def __call__(self) -> Any:
        try:
            return self.workload()
        except BaseException as error:
            self.raised = error
            raise


def _collect(metric: str, run: Callable[[], Any], tracked: _Tracked, diagnostics: list[Diagnostic]) -> Any:
    tracked.raised = None
    try:
        return run()
    except _UNAVAILABLE as error:
        if error is tracked.raised:
            raise
        diagnostics.append(
            {
                "code": "measurement_unavailable",
                "severity": "warning",
                "metric": metric,
                "message": f"{type(error).__name__}: {error}",
            }
        )
        return None
    finally:
        tracked.raised = None


def _selection(metrics: object) -> int:
    if isinstance(metrics, (str, bytes, bytearray)) or not isinstance(metrics, Sequence):
        raise ValueError(f"metrics must be a sequence drawn from {sorted(_METRICS)}, not a {type(metrics).__name__}.")
    mask = 0
    for name in metrics:
        if not isinstance(name, str) or name not in _METRICS:
            raise ValueError(f"Unknown metric {name!r}; choose from {sorted(_METRICS)}.")
        mask |= _METRICS[name]
    return mask


def _check_peak_flops(peak_flops: object) -> float | None:
    if peak_flops is None:
        return None
    if isinstance(peak_flops, bool) or not isinstance(peak_flops, (int, float)):
        raise TypeError(f"peak_flops must be a positive finite number of FLOP/s, not a {type(peak_flops).__name__}.")
    value = float(peak_flops)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"peak_flops must be a positive finite number of FLOP/s, got {peak_flops!r}.")
    return value


def measure_workload(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    inputs: Any = None,
    metrics: Sequence[Literal["flops", "latency", "throughput", "memory", "achieved_flops"]] = (
        "flops",
        "latency",
        "throughput",
        "memory",
    ),
    work_units: float = 1,
    work_unit: str = "samples",
    warmup: int = 5,
    min_run_time: float = 0.2,
    min_repeats: int = 5,
    profile: bool = False,
    rss_command: Sequence[str] | None = None,
    print_summary: bool = True,
    peak_flops: float | None = None,
) -> BenchmarkReport:
    """Measure the selected resources of ``workload`` and print a short summary.

    Every argument is validated before the workload is called. Then, in
    separate passes (each calls the workload again; nothing is reset):

    1. timing, if ``"latency"`` or ``"throughput"`` is selected:
       :func:`measure_latency` with the same settings;
    2. ``"flops"``: :func:`measure_flops` into ``report["operator_flops"]``;
    3. ``"memory"``: :func:`torchscan.process.measure_peak_memory` into
       ``report["memory"]`` and ``totals.peak_memory`` (scope
       ``pytorch_tensor_bytes`` on CPU, else ``pytorch_reserved_bytes``);
    4. ``profile=True``: :func:`profile_workload` (20 rows, no trace) into
       ``report["profile"]``; ``context.profile_status`` is
       ``not_requested``, ``unavailable``, ``partial`` (it has diagnostics)
       or ``complete``;
    5. ``rss_command``: :func:`torchscan.process.measure_peak_rss` of that
       command (a fresh process that reconstructs the workload) into
       ``totals.process_peak_rss``.

    ``"achieved_flops"`` (or ``peak_flops``) adds ``totals.achieved_flops``:
    the report's own operator FLOPs of one call over its warmed latency
    (FLOPs/s; select ``"flops"`` and ``"latency"`` too), and with
    ``peak_flops`` ``totals.flops_utilization``, that over the peak you
    declare (a fraction; ``context.peak_flops`` records it). Both are
    computed in C from ``totals.operator_flops`` and ``totals.latency``, and
    are ``unavailable``, with a ``measurement_unavailable`` diagnostic giving
    the reason, when the FLOPs are not complete (an operator without a
    formula makes them a lower bound) or the latency was not measured.

    ``totals`` always has ``first_call_latency``, ``latency``,
    ``latency_iqr``, ``throughput``, ``operator_flops``, ``peak_memory`` and
    ``process_peak_rss``: a metric that was not selected is unavailable with
    method ``not_requested``; a selected one that could not be produced is
    unavailable (method ``unavailable``; ``peak_memory`` keeps its backend
    scope and method so that reports stay comparable) with a
    ``measurement_unavailable`` diagnostic. Exceptions raised by the workload
    propagate; so do collector errors other than NotImplementedError,
    ImportError and "no memory events" (and a failing RSS command).

    The summary (``print_summary``) is for people: read the returned report,
    never the text. When standard error is a terminal, a stage that lasts
    more than a second shows a progress line there, blanked when it ends
    (``TORCHSCAN_PROGRESS=0`` turns it off); the summary goes to standard
    output after it.

    Args:
        workload: zero-argument callable (see :func:`measure_latency`).
        device: ``"cpu"``, ``"cuda[:N]"`` or ``"mps"`` (str or torch.device).
        inputs: metadata only, as in :func:`measure_latency` (default None).
        metrics: the measurements to run, a sequence (not a str) drawn from
            "flops", "latency", "throughput", "memory" (default all four; an
            empty sequence measures nothing but ``rss_command``).
        work_units, work_unit, warmup, min_run_time, min_repeats: the timing
            settings of :func:`measure_latency` (``work_unit`` defaults to
            ``"samples"`` here).
        profile: add the profile pass (a bool, 0 and 1 accepted; default False).
        rss_command: argv of a command whose peak RSS to measure, or None.
        print_summary: print the short summary (a bool, 0 and 1 accepted;
            default True).
        peak_flops: the peak FLOP/s you declare for the device (a positive
            finite int or float), or None; implies ``"achieved_flops"``.

    Returns:
        a :class:`BenchmarkReport` with the passes' extra keys.

    Raises:
        TypeError, ValueError, NotImplementedError, RuntimeError: bad
            arguments or device, as in :func:`measure_latency`, plus
            ``metrics`` that is a str or names an unknown metric,
            ``rss_command`` that is a str, empty or has non-str elements
            (ValueError; FileNotFoundError/PermissionError when its program
            cannot be started), and ``profile``/``print_summary`` that are not
            bools or 0/1 (TypeError), ``peak_flops`` that is not a number
            (TypeError) or not positive and finite (ValueError); RuntimeError
            when memory on cpu or ``profile`` needs the PyTorch profiler and
            one is running, or inside the workload of measure_peak_memory or
            profile_workload.
    """
    units, run_time = _validate_timing_settings(workload, work_units, work_unit, warmup, min_run_time, min_repeats)
    selected = _selection(metrics)
    peak = _check_peak_flops(peak_flops)
    if peak is not None:
        selected |= _engine.WORKLOAD_ACHIEVED
    command = None if rss_command is None else _check_command(rss_command)
    profile = _check_flag("profile", profile)
    print_summary = _check_flag("print_summary", print_summary)
    if command is not None:
        _check_startable(command)  # a missing program fails now, not after the timing ran
    target = _timing_target(device)
    if command is not None:
        selected |= _engine.WORKLOAD_RSS
    # before any workload call, not after the timing ran
    if selected & (_engine.WORKLOAD_LATENCY | _engine.WORKLOAD_THROUGHPUT):
        _TIMING.check("measure_workload")
    if selected & _engine.WORKLOAD_MEMORY or profile:
        _PEAK_MEMORY.check(
            "measure_workload", profiler=profile or (bool(selected & _engine.WORKLOAD_MEMORY) and target.type == "cpu")
        )

    tracked = _Tracked(workload)
    collector_diagnostics: list[Diagnostic] = []
    measured: dict[str, MetricResult] = {}
    if selected & (_engine.WORKLOAD_LATENCY | _engine.WORKLOAD_THROUGHPUT):
        report = _timed_report(
            workload, target, inputs, units, work_unit, warmup, run_time, min_repeats, "measure_workload: timing"
        )
        measured.update(report["totals"])
    else:
        report = {
            "schema_version": 1,
            "context": _benchmark_context(
                target, inputs, units, work_unit, warmup, run_time, min_repeats, torch.get_num_threads()
            ),
            "inputs": _describe(inputs),
            "totals": {},
            "measurement": {},
        }

    flop_report = None
    if selected & _engine.WORKLOAD_FLOPS:
        with pass_line("measure_workload: operator FLOPs pass"):
            flop_report = _collect("operator_flops", lambda: measure_flops(tracked), tracked, collector_diagnostics)
        if flop_report is not None:
            report["operator_flops"] = flop_report
            measured["operator_flops"] = flop_report["total"]

    memory_scope = "pytorch_tensor_bytes" if target.type == "cpu" else "pytorch_reserved_bytes"
    memory_method = _MEMORY_METHODS[target.type]
    if selected & _engine.WORKLOAD_MEMORY:
        with pass_line("measure_workload: peak memory pass"):
            memory = _collect(
                "peak_memory", lambda: measure_peak_memory(tracked, device=target.name), tracked, collector_diagnostics
            )
        if memory is not None:
            report["memory"] = memory
            measured["peak_memory"] = metric_result(
                status="complete", value=memory["peak_bytes"], unit="bytes", scope=memory_scope, method=memory_method
            )

    profile_report = None
    profile_status = "not_requested"
    if profile:
        with pass_line("measure_workload: profile pass"):
            profile_report = _collect(
                "profile", lambda: profile_workload(tracked, device=target.name), tracked, collector_diagnostics
            )
        if profile_report is None:
            profile_status = "unavailable"
        else:
            report["profile"] = profile_report
            profile_status = "partial" if profile_report["diagnostics"] else "complete"

    rss_diagnostics: list[Diagnostic] = []
    if command is not None:
        with pass_line("measure_workload: peak RSS of the command"):
            rss = _collect("process_peak_rss", lambda: measure_peak_rss(command), tracked, rss_diagnostics)
        if rss is not None:
            measured["process_peak_rss"] = rss

    report["context"]["profile_status"] = profile_status
    report["totals"] = _engine.workload_totals(measured, selected, work_unit, memory_scope, memory_method)
    achieved_diagnostics: list[Diagnostic] = []
    if selected & _engine.WORKLOAD_ACHIEVED:
        report["totals"], achieved_diagnostics = _engine.workload_achieved(report["totals"], peak or 0.0)
        if peak is not None:
            report["context"]["peak_flops"] = peak
    report["diagnostics"] = [
        *collector_diagnostics,
        *(flop_report["diagnostics"] if flop_report is not None else []),
        *(profile_report["diagnostics"] if profile_report is not None else []),
        *rss_diagnostics,
        *achieved_diagnostics,
    ]
    if print_summary:
        print(_engine.workload_summary(report))  # noqa: T201 - the summary is this option's job
    return report  # type: ignore[return-value]
