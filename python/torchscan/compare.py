"""Pure comparison of two analysis reports."""

from __future__ import annotations

from typing import Any, TypedDict

from . import _engine

__all__ = ["ReportDiff", "compare_reports"]


class ReportDiff(TypedDict):
    """Metric deltas between two reports, totals and per layer call."""

    schema_version: int
    totals: dict[str, Any]
    layers: dict[str, list[dict[str, Any]]]


def compare_reports(before: object, after: object) -> ReportDiff:
    """Compare two AnalysisReports of the same schema version.

    Layers are matched by ``(path, call_index)``. A metric delta is given only
    when both sides are complete; otherwise its status is partial or
    unavailable and the delta is None. The inputs are not modified.

    Args:
        before: the baseline AnalysisReport (from :func:`crawl_module`, or its JSON read back).
        after: the candidate AnalysisReport.

    Returns:
        a :class:`ReportDiff`.

    Raises:
        ValueError: a report that is not a JSON object or not a valid AnalysisReport, different or unsupported schema versions, duplicate layer
            calls, or a metric whose unit, scope or method differ.
    """
    return _engine.compare_reports(before, after)  # type: ignore[no-any-return]
