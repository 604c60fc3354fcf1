"""Report shapes (schema version 1) and the strict-mode exception.

Every number in a TorchScan report is a :class:`MetricResult` whose
``status`` says how far it can be trusted: ``complete`` (``value`` is exact),
``partial`` (``known_value`` is a lower bound) or ``unavailable`` (no
number). Reports are plain dicts: serialize them with ``json.dumps(report,
allow_nan=False)``.
"""

from __future__ import annotations

import math
import numbers
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


def _check_flag(name: str, value: object) -> bool:
    """A bool option: True/False, or the ints 0 and 1 (which TorchScan 0.2.0 took as truth values).
    Anything else ("yes", None, 2, ...) is a mistake the reference hid by truthiness: TypeError naming ``name``."""
    if type(value) is bool:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {value!r}.")


def _check_number(name: str, value: object) -> None:
    """``value`` is None or a finite int/float (bools refused)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an int, a float or None, got {type(value).__name__}.")
    try:
        finite = math.isfinite(value)
    except OverflowError:
        finite = True  # an int too large for a float is still a finite number
    if not finite:
        raise ValueError(f"{name} must be finite, got {value!r}.")


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


class TokenRelation(TypedDict):
    """What output position ``i`` depends on in one source: ``all`` (positions ``0 .. limit-1``),
    ``same_position`` (``i``), ``prefix`` (``0 .. min(i+1, limit)-1``) or ``none``. ``limit`` is given only
    below the source length; output positions before ``first_position`` (given only when not 0) depend on
    nothing."""

    kind: Literal["all", "same_position", "prefix", "none"]
    limit: NotRequired[int]
    first_position: NotRequired[int]


class TokenSource(TypedDict):
    """One input sequence of a call: the arguments it is (one tensor passed as several arguments is one
    source), its sequence axis and length, and the relation of output positions to it."""

    arguments: list[str]
    sequence_axis: int
    length: int
    relation: TokenRelation


class TokenDependency(TypedDict):
    """``LayerReport.token_dependencies`` on native attention and Transformer rows (see
    docs/report-schema.md): ``complete`` with three assumption sentences, the output sequence and the
    sources, or ``unavailable`` with no assumptions, no output and no sources."""

    status: Literal["complete", "unavailable"]
    scope: str
    method: str
    assumptions: list[str]
    output: NotRequired[dict[str, int]]
    sources: list[TokenSource]


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
    token_dependencies: NotRequired[TokenDependency]


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

    Args:
        status: ``"complete"``, ``"partial"`` or ``"unavailable"``.
        unit: the unit, e.g. ``"FLOPs"`` or ``"bytes"`` (a str).
        scope: what the number covers, e.g. ``"module_call"`` or ``"workload"`` (a str).
        method: how it was obtained, e.g. ``"torchscan_module_formula"`` (a str).
        value: the exact number (required for ``complete``; default None).
        known_value: the lower bound (required for ``partial``; default None).

    Returns:
        the :class:`MetricResult` dict.

    Raises:
        ValueError: for an unknown status, a missing number, or a NaN or
            infinite ``value``/``known_value``.
        TypeError: ``unit``, ``scope`` or ``method`` that is not a str, or a
            ``value``/``known_value`` that is not an int, a float or None
            (bools included).
    """
    for name, text in (("unit", unit), ("scope", scope), ("method", method)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}.")
    _check_number("value", value)
    _check_number("known_value", known_value)
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

    Args:
        report: the full report, kept as ``.report``.
        message: the error text; by default it names the incomplete metrics
            (every total that is not complete plus every diagnostic's metric).
    """

    def __init__(self, report: AnalysisReport, message: str | None = None) -> None:
        if message is None:
            from . import _engine

            _, message = _engine.incomplete(report)
        super().__init__(message)
        self.report = report
