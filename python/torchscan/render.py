"""``render_report``: offline HTML and SVG pages of analysis and benchmark reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from . import _engine

__all__ = ["render_report"]

_FORMATS = ("html", "svg")
_METRICS = ("module_flops", "macs", "dmas", "parameters", "parameter_bytes")


def _is_benchmark(report: Mapping[str, object]) -> bool:
    return report.get("report_type") == "benchmark_comparison" or ("totals" in report and "measurement" in report)


def render_report(
    report: object,
    *,
    format: Literal["html", "svg"] = "html",  # noqa: A002 - the public keyword
    before: object = None,
    title: str = "TorchScan analysis",
    metric: Literal["module_flops", "macs", "dmas", "parameters", "parameter_bytes"] = "module_flops",
) -> str:
    """Render a report as one offline page: HTML or SVG for an AnalysisReport, HTML for benchmarks.

    An AnalysisReport (from ``crawl_module``) becomes a self-contained HTML page
    (one file, no network request, a Content-Security-Policy that allows only
    its one fixed script by hash, every number readable with JavaScript off):
    summary cards; five metric views (module FLOPs, MACs, DMAs, attributed
    parameters and parameter bytes) switched by CSS radio buttons, each with a
    module cost map (rows are depth, widths are recorded contributions,
    repeated calls share a tile, partial tiles hatched, unknown values never
    drawn as zero but listed on a rail), ranked call evidence and an
    inspector; operator FLOPs per module call (self per call, inclusive per
    module path); and an
    appendix with every exact value, the module hierarchy, diagnostics,
    evidence-linked suggestions and the context. ``format="svg"`` draws the
    ``metric`` view as one static SVG with the same geometry. With
    ``before=``, the page compares: before and after bars on one scale, a
    diverging colour for the change, removed modules on the rail, and
    execution deltas withheld (with reasons) when the inputs or the recorded
    context differ; storage totals are still compared.

    A BenchmarkReport or BenchmarkComparison becomes a page with no script at
    all: the verdict, the measured values and, for comparisons, the measured
    changes; pictures of the timed blocks (a strip of every block's per-call
    time with its median and IQR box, and a run-order plot; a comparison's
    baseline and candidate on one axis, circles and squares), each followed
    by its numbers, or a sentence saying why a report is not drawn; then the
    operator profile when supplied and the execution context.

    The output is deterministic and the report is neither modified nor
    remeasured; every caller text is escaped.

    Args:
        report: an AnalysisReport, a BenchmarkReport or a BenchmarkComparison
            (a dict).
        format: "html" (default) or "svg" (AnalysisReports only).
        before: the earlier AnalysisReport of a comparison, or None (default).
        title: the page title, a str (default "TorchScan analysis").
        metric: the view shown first (HTML) or drawn (SVG): module_flops
            (default), macs, dmas, parameters or parameter_bytes.

    Returns:
        the page, a str.

    Raises:
        ValueError: ``format`` is not "html" or "svg", or is "svg" for a
            benchmark report; ``title`` is not a str; ``metric`` is not one of
            the five views (``operator_flops`` is a section of the page, not a
            view); ``before`` is not an AnalysisReport or is given with a
            benchmark report; a report is not JSON data (non-str keys,
            NaN/infinity, cycles, integers past 2^63, invalid text), holds
            text a page cannot (control characters other than tab, CR and LF;
            noncharacters such as U+FFFE), also in ``title``, or breaks a rule
            of the report schema (the message names where: a status
            invariant, a duplicate ``(path, call_index)``, an ownership
            pointer, a negative cost, ...); ``compare_reports`` refuses the
            pair (for example "incompatible method"); or a benchmark
            comparison's stored deltas do not match its own reports.
    """
    if not isinstance(format, str) or format not in _FORMATS:
        raise ValueError(f"format must be 'html' or 'svg', got {format!r}.")
    if not isinstance(title, str):
        raise ValueError(f"title must be a str, got {type(title).__name__}.")
    if not isinstance(metric, str) or metric not in _METRICS:
        raise ValueError(f"metric must be one of {', '.join(_METRICS)}; got {metric!r}.")
    if not isinstance(report, Mapping):
        raise ValueError(f"report must be a report dict, got {type(report).__name__}.")
    if "layers" in report:
        if before is not None and not isinstance(before, Mapping):
            raise ValueError(f"before must be an AnalysisReport dict or None, got {type(before).__name__}.")
        return _engine.render_analysis(report, before, title, metric, format)  # type: ignore[no-any-return]
    if not _is_benchmark(report):
        raise ValueError("report is neither an AnalysisReport, a BenchmarkReport nor a BenchmarkComparison.")
    if format != "html":
        raise ValueError("Benchmark reports render as HTML only; use format='html'.")
    if before is not None:
        raise ValueError("before= is not supported for benchmark reports; use compare_benchmarks.")
    return _engine.render_benchmark_html(report, title)  # type: ignore[no-any-return]
