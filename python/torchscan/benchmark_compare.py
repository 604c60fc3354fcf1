"""Baseline vs candidate workload reports with an owner-supplied output check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict

from . import _engine

__all__ = ["BenchmarkComparison", "compare_benchmarks"]


class BenchmarkComparison(TypedDict):
    """What :func:`compare_benchmarks` returns."""

    schema_version: int
    report_type: Literal["benchmark_comparison"]
    before: dict[str, Any]
    after: dict[str, Any]
    totals: dict[str, Any]
    output_check: Literal["passed", "failed"]
    latency_change: Literal["faster", "slower", "within_variability", "unavailable"]
    context_changes: dict[str, dict[str, Any]]


def compare_benchmarks(before: object, after: object, *, check: Callable[[], object]) -> BenchmarkComparison:
    """Compare two BenchmarkReports, gated by the owner's output check.

    Both reports are validated first (JSON-safe objects, ``schema_version`` 1,
    valid MetricResults including the four timing totals, seconds and
    ``"<work_unit>/s"`` units, positive timing values). Their contexts must
    agree on device, device_name, processor, machine, platform, torch,
    torchscan, python and CUDA versions, work_units, work_unit and
    inputs_source, and the inputs must be equal caller-supplied metadata.
    Other context changes (threads, warmup, ...) are allowed and listed in
    ``context_changes``.

    Then ``check()`` runs once, outside any timing: ``None`` or ``True`` means
    passed; ``False`` or an ``AssertionError`` means failed; any other
    exception propagates. When the check fails every delta is withheld
    (status ``unavailable``, delta None); the measurements are kept.

    ``latency_change`` is ``"within_variability"`` when the latency delta is
    no larger than the larger IQR, else ``"faster"``/``"slower"``;
    ``"unavailable"`` without a delta or complete IQRs. It is descriptive, not
    a significance test. The result holds copies of both reports.

    Args:
        before: the baseline BenchmarkReport (from :func:`measure_latency` or
            :func:`torchscan.measure_workload`, or its JSON read back).
        after: the candidate BenchmarkReport.
        check: zero-argument callable, the owner's output check (keyword only).

    Returns:
        a :class:`BenchmarkComparison`; ``before`` and ``after`` are not modified.

    Raises:
        TypeError: ``check`` is not callable (raised first).
        ValueError: an invalid report, differing contexts or input metadata,
            incompatible metrics, or a check returning anything else than
            None/True/False.
    """
    if not callable(check):
        raise TypeError(f"check must be callable, got {type(check).__name__}.")
    return _engine.compare_benchmarks(before, after, check)  # type: ignore[no-any-return]
