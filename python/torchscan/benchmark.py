"""Warmed latency, its spread and throughput of a workload (``measure_latency``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import torch

from . import _engine
from ._progress import stderr_fd
from ._timing import (
    _TIMING,
    _benchmark_context,
    _describe,
    _Target,
    _timing_target,
    _validate_timing_settings,
)
from .report import Diagnostic, MetricResult

__all__ = ["BenchmarkReport", "measure_latency"]


class BenchmarkReport(TypedDict):
    """What :func:`measure_latency` and :func:`torchscan.measure_workload` return.

    ``totals`` always holds ``first_call_latency``, ``latency``,
    ``latency_iqr`` and ``throughput`` (``measure_workload`` adds
    ``operator_flops``, ``peak_memory`` and ``process_peak_rss``).
    ``measurement`` holds ``number_per_run``, ``raw_times_seconds`` (one
    total per block) and ``measured_calls``.
    """

    schema_version: int
    context: dict[str, Any]
    inputs: dict[str, Any]
    totals: dict[str, MetricResult]
    measurement: dict[str, Any]
    operator_flops: NotRequired[dict[str, Any]]
    memory: NotRequired[dict[str, Any]]
    profile: NotRequired[dict[str, Any]]
    diagnostics: NotRequired[list[Diagnostic]]


def _timed_report(
    workload: Callable[[], Any],
    target: _Target,
    inputs: object,
    work_units: int | float,
    work_unit: str,
    warmup: int,
    min_run_time: float,
    min_repeats: int,
    label: str = "measure_latency",
) -> BenchmarkReport:
    """Runs the C timing loop on validated settings and builds the report; ``label`` names the progress line."""
    context = _benchmark_context(
        target, inputs, work_units, work_unit, warmup, min_run_time, min_repeats, torch.get_num_threads()
    )
    described = _describe(inputs)
    with _TIMING.hold("measure_latency"):
        timing = _engine.time_workload(
            workload,
            target.synchronize,
            warmup,
            min_run_time,
            min_repeats,
            float(work_units),
            work_unit,
            progress_fd=stderr_fd(),
            progress_label=label,
        )
    return {
        "schema_version": 1,
        "context": context,
        "inputs": described,
        "totals": timing["totals"],
        "measurement": timing["measurement"],
    }


def measure_latency(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    inputs: Any = None,
    work_units: float = 1,
    work_unit: str = "calls",
    warmup: int = 5,
    min_run_time: float = 0.2,
    min_repeats: int = 5,
) -> BenchmarkReport:
    """Time ``workload()``: first call, warmed block median, IQR and throughput.

    The loop is C: before every reading of the monotonic clock it calls the
    device synchronizer (``torch.cuda.synchronize(device)`` on CUDA,
    ``torch.mps.synchronize()`` on MPS, nothing on CPU). Sequence:

    1. one timed first call (``first_call_latency``, everything the first call
       does, method ``synchronized_monotonic_clock``);
    2. ``warmup`` untimed calls;
    3. calibration: blocks of 1 call, then of ``n * (target / block time) *
       1.25`` calls (at least 2x, at most 10x per step, at most 2**31 - 1),
       until one block takes at least ``target = min_run_time / 10``; that
       block is the first measured block;
    4. more blocks of the same size until the blocks add up to
       ``min_run_time`` and there are at least ``min_repeats`` of them.

    ``latency`` is the median of the per-call block averages and
    ``latency_iqr`` their interquartile range (linear interpolation, as
    ``torch.utils.benchmark``'s Measurement); ``throughput`` is
    ``work_units / (sum of block times / measured calls)`` in
    ``"<work_unit>/s"``. These use method ``torchscan_blocked_timer``: our own
    loop, not ``torch.utils.benchmark.Timer``. The cyclic garbage collector is
    paused while blocks run (as in ``timeit``); thread settings are never
    touched (the context records them). Latency is a block average, not a
    per-request percentile; the IQR is descriptive, not a significance test.

    When standard error is a terminal, a measurement that lasts more than a
    second shows where it is on one line there (warm-up, calibration, blocks
    and seconds timed), drawn by the C loop between blocks, never inside a
    timed one, and blanked at the end; ``TORCHSCAN_PROGRESS=0`` turns it off.

    Args:
        workload: zero-argument callable; it owns state, gradients, precision
            and placement. Its exceptions propagate as the same object.
        device: ``"cpu"``, ``"cuda[:N]"`` or ``"mps"`` (str or torch.device).
        inputs: recorded as metadata only (never values); never passed to the
            workload. Comparisons require it.
        work_units: work done by one call (e.g. 32 samples), a positive finite
            real.
        work_unit: the unit's name, e.g. ``"samples"``.
        warmup: untimed calls after the first call, an int >= 0 (default 5).
        min_run_time: seconds the measured blocks add up to at least, a
            positive finite real (default 0.2).
        min_repeats: the fewest measured blocks, an int >= 2 (default 5).

    Returns:
        a :class:`BenchmarkReport`.

    Raises (all before the first call):
        TypeError: non-callable workload.
        ValueError: ``work_units``/``min_run_time`` not positive finite reals
            (bools and overflowing ints rejected), ``warmup`` not an int >= 0,
            ``min_repeats`` not an int >= 2, blank ``work_unit``.
        NotImplementedError: a device type other than cpu/cuda/mps.
        RuntimeError: CUDA/MPS unavailable or a bad device index; a call
            from inside the workload of measure_latency or measure_workload
            (timings run one at a time); after the run, a non-positive
            duration or throughput.
    """
    units, run_time = _validate_timing_settings(workload, work_units, work_unit, warmup, min_run_time, min_repeats)
    target = _timing_target(device)
    return _timed_report(workload, target, inputs, units, work_unit, warmup, run_time, min_repeats)
