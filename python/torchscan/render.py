"""``render_report``: a self-contained HTML page for benchmark reports."""

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
    """Render a BenchmarkReport or a BenchmarkComparison as one HTML page.

    The page is a single self-contained document with no script at all (its
    Content-Security-Policy is ``default-src 'none'; style-src
    'unsafe-inline'; base-uri 'none'; form-action 'none'``) and an inline
    style. It shows the title and a verdict ("Single workload measurement",
    "Output check passed" or "Output check failed — gains withheld", with the
    changed context keys of a comparison), the terminal summary of each
    report and its exact values, methods and diagnostics, for comparisons
    the measured changes (ms for seconds, MiB for bytes, "Unavailable" when
    withheld), the descriptive latency change and the changed context, then
    pictures of the timed blocks (inline SVG: a strip of the per-call time of
    every block with its median and IQR, and a run-order plot; a comparison's
    baseline and candidate on one common axis, circles and squares), each
    with an accessible name and followed by its numbers, or a sentence saying
    why a report is not drawn (latency not complete, or blocks that do not
    give the reported latency), then the operator profile when one was
    supplied and the execution context.
    Every caller-supplied text is HTML-escaped. The output is deterministic
    and the report is neither modified nor remeasured.

    AnalysisReports (from ``crawl_module``, with ``layers``) are not rendered
    yet: they raise ``NotImplementedError``. ``metric`` only applies to them;
    it is still validated.

    Args:
        report: a BenchmarkReport or a BenchmarkComparison (a dict).
        format: "html" (default); "svg" is refused for benchmark reports.
        before: must be None for benchmark reports (default None).
        title: the page title, a str (default "TorchScan analysis").
        metric: one of module_flops (default), macs, dmas, parameters,
            parameter_bytes.

    Returns:
        the HTML page, a str.

    Raises:
        ValueError: ``format`` is not "html" or "svg", or is "svg" for a
            benchmark report; ``title`` is not a str; ``metric`` is not one of
            module_flops, macs, dmas, parameters, parameter_bytes; ``before``
            is given with a benchmark report; the report is not JSON data
            (non-str keys, NaN/infinity, cycles, invalid text), holds text
            an HTML page cannot (control characters other than tab, CR and
            LF; noncharacters such as U+FFFE), also in ``title``, has a
            ``schema_version`` other than 1, is not a valid BenchmarkReport,
            or is a comparison whose deltas, latency change or context changes
            do not match its own before and after reports.
        NotImplementedError: ``report`` is an AnalysisReport.
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
        raise NotImplementedError(
            "render_report does not render analysis reports yet; it renders "
            "BenchmarkReports (measure_latency, measure_workload) and "
            "BenchmarkComparisons (compare_benchmarks). Use summary() for an "
            "AnalysisReport."
        )
    if not _is_benchmark(report):
        raise ValueError("report is neither a BenchmarkReport nor a BenchmarkComparison.")
    if format != "html":
        raise ValueError("Benchmark reports render as HTML only; use format='html'.")
    if before is not None:
        raise ValueError("before= is not supported for benchmark reports; use compare_benchmarks.")
    return _engine.render_benchmark_html(report, title)  # type: ignore[no-any-return]
