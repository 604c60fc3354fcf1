"""Report shapes (schema version 1) and the strict-mode exception.

Every number in a TorchScan report is a :class:`MetricResult` whose
``status`` says how far it can be trusted: ``complete`` (``value`` is exact),
``partial`` (``known_value`` is a lower bound) or ``unavailable`` (no
number). Reports are plain dicts: serialize them with ``json.dumps(report,
allow_nan=False)``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AnalysisReport",
    "Diagnostic",
    "IncompleteAnalysisError",
    "LayerReport",
    "MetricResult",
    "metric_result",
]

MetricStatus = Literal["complete", "partial", "unavailable"]


class MetricResult(TypedDict):
    """One measured or estimated number with its status, unit, scope and method."""

    status: MetricStatus
    value: float | int | None
    known_value: float | int | None
    unit: str
    scope: str
    method: str


class Diagnostic(TypedDict):
    """Why a metric is partial or unavailable (always severity "warning")."""

    code: str
    severity: Literal["warning", "error"]
    metric: str
    message: str
    path: NotRequired[str]
    operator: NotRequired[str]


class LayerReport(TypedDict):
    """One module call, in pre-hook (call) order."""

    path: str
    call_index: int
    name: str
    depth: int
    type: str
    input: dict[str, Any]
    output: dict[str, Any]
    parameters: dict[str, Any]
    buffers: dict[str, Any]
    metrics: dict[str, MetricResult]


class AnalysisReport(TypedDict):
    """What :func:`torchscan.crawl_module` returns."""

    schema_version: int
    context: dict[str, Any]
    inputs: dict[str, Any]
    layers: list[LayerReport]
    operator_flops: dict[str, Any]
    totals: dict[str, MetricResult]
    diagnostics: list[Diagnostic]


def metric_result(
    *,
    status: str,
    unit: str,
    scope: str,
    method: str,
    value: float | int | None = None,
    known_value: float | int | None = None,
) -> MetricResult:
    """Build a MetricResult that obeys the status invariants.

    ``complete`` needs ``value`` (``known_value`` becomes equal to it);
    ``partial`` needs ``known_value`` (the lower bound; ``value`` becomes
    None); ``unavailable`` drops both numbers.

    Raises:
        ValueError: for an unknown status or a missing number.
    """
    if status == "complete":
        if value is None:
            raise ValueError("A complete metric requires a value.")
        known_value = value
    elif status == "partial":
        if known_value is None:
            raise ValueError("A partial metric requires a known_value lower bound.")
        value = None
    elif status == "unavailable":
        value = known_value = None
    else:
        raise ValueError("status must be 'complete', 'partial', or 'unavailable'.")
    return {
        "status": status,  # type: ignore[typeddict-item]
        "value": value,
        "known_value": known_value,
        "unit": unit,
        "scope": scope,
        "method": method,
    }


class IncompleteAnalysisError(RuntimeError):
    """Raised by ``strict=True`` when a requested metric is not complete.

    The full report is kept as ``.report``; the message names the incomplete
    metrics (every total that is not complete plus every diagnostic's metric).
    """

    def __init__(self, report: AnalysisReport, message: str | None = None) -> None:
        if message is None:
            from . import _engine

            _, message = _engine.incomplete(report)
        super().__init__(message)
        self.report = report
