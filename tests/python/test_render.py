"""render_report for BenchmarkReports and BenchmarkComparisons (contract 1.13, 4.3)."""

from __future__ import annotations

import copy
import json
import math
import html as html_lib
import re

import pytest
import torch

from torchscan import compare_benchmarks, measure_workload, render_report
from torchscan.render import _METRICS

from test_benchmark import _metric, synthetic, threads  # noqa: F401 (threads is a fixture)

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _comparison(before=None, after=None, check=lambda: None):
    before = synthetic(0.01, 0.001) if before is None else before
    after = synthetic(0.004, 0.0005, num_threads=2) if after is None else after
    return compare_benchmarks(before, after, check=check)


# ---------------------------------------------------------------------------------------------------------------
# E8, as the quickstart types it
# ---------------------------------------------------------------------------------------------------------------


def test_e8_render_comparison(tmp_path, threads):
    from torchscan import compare_benchmarks, measure_latency, profile_workload, render_report

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)

    def baseline():
        with torch.inference_mode():
            return torch.stack([model(row) for row in inputs])

    def candidate():
        with torch.inference_mode():
            return model(inputs)

    settings = dict(device="cpu", inputs=inputs, work_units=32, work_unit="samples")
    before = measure_latency(baseline, **settings)
    after = measure_latency(candidate, **settings)
    before["profile"] = profile_workload(baseline, device="cpu")
    after["profile"] = profile_workload(candidate, device="cpu")
    comparison = compare_benchmarks(
        before,
        after,
        check=lambda: torch.testing.assert_close(baseline(), candidate(), rtol=1e-4, atol=1e-5),
    )
    assert comparison["output_check"] == "passed"
    (tmp_path / "comparison.json").write_text(json.dumps(comparison, indent=2))
    html = render_report(comparison)
    assert isinstance(html, str)
    (tmp_path / "comparison.html").write_text(html, encoding="utf-8")

    assert html.startswith("<!DOCTYPE html>")
    assert CSP in html and "<script" not in html.lower()
    assert "Output check passed" in html
    for heading in (
        "Measured values",
        "Baseline",
        "Candidate",
        "Measured changes",
        "Changed execution context",
        "Baseline bottleneck evidence",
        "Candidate bottleneck evidence",
        "Execution context",
    ):
        assert heading in html
    change = comparison["latency_change"].replace("_", " ")
    assert f"Latency change: {change}" in html and "IQR" in html
    assert "aten::addmm" in html and "Operator / runtime event" in html
    # the saved comparison renders identically
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert render_report(saved) == html


# ---------------------------------------------------------------------------------------------------------------
# Pinned contract bits
# ---------------------------------------------------------------------------------------------------------------


def test_benchmark_svg_is_a_value_error():
    with pytest.raises(ValueError, match="HTML only"):
        render_report(synthetic(0.01, 0.001), format="svg")
    with pytest.raises(ValueError, match="HTML only"):
        render_report(_comparison(), format="svg")


def test_partial_latency_html_says_lower_bound():
    after = synthetic(0.01, 0.001)
    after["totals"]["latency"] = _metric(0.008, status="partial")
    comparison = compare_benchmarks(synthetic(0.01, 0.001), after, check=lambda: None)
    html = render_report(comparison)
    assert "lower bound" in html
    assert "Latency change: unavailable" in html
    assert "Unavailable" in html  # the withheld latency delta


def test_e9_workload_report_html():
    model = torch.nn.Linear(4, 2).double()
    x = torch.randn(3, 4, dtype=torch.float64)

    def workload():
        with torch.no_grad():
            return model(x).sinc()

    report = measure_workload(workload, device="cpu", inputs=x, work_units=3, profile=True, print_summary=False)
    snapshot = copy.deepcopy(report)
    html = render_report(report)
    assert report == snapshot
    sinc_uncounted = any(d.get("operator") == "aten.sinc" for d in report.get("diagnostics", []))
    assert ("aten.sinc" in html) == sinc_uncounted
    if any(m["status"] == "partial" for m in report["totals"].values()):
        assert "lower bound" in html
    assert "pytorch_tensor_bytes" in html or "PyTorch tracked CPU tensors" in html
    assert "Single workload measurement" in html
    assert "<h2>Bottleneck evidence</h2>" in html
    assert "<script" not in html.lower()
    assert render_report(report) == html


def test_title_is_escaped():
    html = render_report(synthetic(0.01, 0.001), title="<script>alert('x') & \"y\"</script>")
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;) &amp; &quot;y&quot;&lt;/script&gt;" in html


# ---------------------------------------------------------------------------------------------------------------
# Page contents
# ---------------------------------------------------------------------------------------------------------------


def test_single_report_page():
    report = synthetic(0.01, 0.001)
    report["diagnostics"] = [
        {"code": "measurement_unavailable", "severity": "warning", "metric": "peak_memory", "message": "<b>no</b>"}
    ]
    html = render_report(report)
    assert CSP in html
    assert re.search(r"<pre>Workload on cpu \(4 PyTorch threads\)", html)
    assert "Exact values, methods, and diagnostics" in html
    assert "&lt;b&gt;no&lt;/b&gt;" in html and "<b>" not in html
    assert "No operator profile was supplied. Run profile_workload in a separate diagnostic pass." in html
    assert "Measured changes" not in html
    assert html.count("<title>TorchScan analysis</title>") == 1


def test_comparison_page_changes_and_verdicts():
    html = render_report(_comparison())
    assert "Output check passed. Recorded context changed: num_threads" in html
    assert "-6.000" in html  # latency delta in ms
    assert "Latency change: faster" in html
    failed = _comparison(check=lambda: False)
    html = render_report(failed)
    assert "Output check failed — gains withheld" in html
    assert "Latency change: unavailable" in html


def test_caller_text_is_escaped_everywhere():
    report = synthetic(0.01, 0.001, device_name="<img src=x onerror=alert(1)>")
    report["inputs"]["note"] = "</pre><script>"
    html = render_report(report)
    assert "<img" not in html and "<script" not in html.lower()


# ---------------------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"format": "pdf"},
        {"format": None},
        {"format": ["html"]},
        {"title": None},
        {"title": 3},
        {"metric": "operator_flops"},
        {"metric": None},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        render_report(synthetic(0.01, 0.001), **kwargs)


def test_metric_views_accepted():
    for metric in _METRICS:
        assert render_report(synthetic(0.01, 0.001), metric=metric).startswith("<!DOCTYPE html>")


def test_before_with_benchmark_is_a_value_error():
    with pytest.raises(ValueError, match="before"):
        render_report(synthetic(0.01, 0.001), before=synthetic(0.01, 0.001))


@pytest.mark.parametrize("version", [2, True, "1", None])
def test_schema_version(version):
    report = synthetic(0.01, 0.001)
    report["schema_version"] = version
    with pytest.raises(ValueError, match="schema_version"):
        render_report(report)
    comparison = _comparison()
    comparison["schema_version"] = version
    with pytest.raises(ValueError, match="schema_version"):
        render_report(comparison)


def test_non_json_data():
    report = synthetic(0.01, 0.001)
    report["inputs"][1] = "x"
    with pytest.raises(ValueError):
        render_report(report)
    report = synthetic(0.01, 0.001)
    report["measurement"]["raw_times_seconds"] = [math.nan]
    with pytest.raises(ValueError):
        render_report(report)
    report = synthetic(0.01, 0.001)
    report["measurement"]["raw_times_seconds"] = [math.inf]
    with pytest.raises(ValueError):
        render_report(report)
    report = synthetic(0.01, 0.001)
    report["inputs"]["self"] = report["inputs"]
    with pytest.raises(ValueError):
        render_report(report)
    report = synthetic(0.01, 0.001)
    report["inputs"]["text"] = "\ud800"
    with pytest.raises(ValueError):
        render_report(report)


def test_tampered_comparisons():
    comparison = _comparison()
    comparison["latency_change"] = "slower"
    with pytest.raises(ValueError, match="Latency change"):
        render_report(comparison)
    comparison = _comparison()
    comparison["context_changes"] = {}
    with pytest.raises(ValueError, match="Context changes"):
        render_report(comparison)
    comparison = _comparison()
    comparison["totals"]["latency"]["delta"] = -1.0
    with pytest.raises(ValueError, match="deltas"):
        render_report(comparison)
    comparison = _comparison()
    comparison["output_check"] = "unknown"
    with pytest.raises(ValueError, match="output_check"):
        render_report(comparison)


def test_profile_must_match_the_report():
    report = synthetic(0.01, 0.001)
    report["profile"] = {
        "schema_version": 1,
        "context": {"torch_version": "2.13.0", "device": "cuda:0", "method": "torch.profiler.profile"},
        "operators": [],
        "diagnostics": [],
    }
    with pytest.raises(ValueError, match="profile"):
        render_report(report)


def test_not_a_report():
    with pytest.raises(ValueError):
        render_report([1, 2])
    with pytest.raises(ValueError):
        render_report({"schema_version": 1})


@pytest.mark.parametrize("text", ["a\x01b", "a\x0bb", "a\x7fb", "a\x85b", "a\ufffeb", "a\uffffb", "a\ufdd0b"])
def test_text_an_html_page_cannot_hold_is_a_value_error(text):
    report = synthetic(0.01, 0.001)
    with pytest.raises(ValueError, match="HTML page cannot hold"):
        render_report(report, title=text)
    report["context"]["processor"] = text
    with pytest.raises(ValueError, match="HTML page cannot hold"):
        render_report(report)
    # tab, newline and carriage return are text
    report["context"]["processor"] = "a\tb\nc\rd"
    assert "a\tb\nc\rd" in render_report(report)


def test_exact_values_are_written_as_json_dumps_writes_them():
    report = synthetic(0.1, 0.001)
    html = render_report(report)
    for value in (report["totals"]["latency"]["value"], report["totals"]["throughput"]["value"]):
        assert json.dumps(value) in html
    assert "0.10000000000000001" not in html


def test_huge_durations_are_not_shown_as_infinity():
    before, after = synthetic(1e306, 0.001), synthetic(1e-3, 0.001)
    for page in (render_report(before), render_report(compare_benchmarks(before, after, check=lambda: None))):
        assert "inf" not in page.replace("info", "")


# ---------------------------------------------------------------------------------------------------------------
# The summary above a profile never says the profile was not requested
# ---------------------------------------------------------------------------------------------------------------


def _pre_texts(html: str) -> list[str]:
    return [html_lib.unescape(text) for text in re.findall(r"<pre>(.*?)</pre>", html, flags=re.S)]


def test_attached_profile_is_reported_by_the_summary_above_it(threads):
    from torchscan import measure_latency, profile_workload

    torch.set_num_threads(1)
    x = torch.randn(16, 16)

    def workload():
        return x @ x

    settings = dict(device="cpu", inputs=x, work_units=16, work_unit="samples", min_run_time=0.01, warmup=1)
    before, after = measure_latency(workload, **settings), measure_latency(workload, **settings)
    before["profile"] = profile_workload(workload, device="cpu")
    # measure_latency records no profile_status: the profile was attached by the caller
    assert "profile_status" not in before["context"]
    expected = "partial" if before["profile"]["diagnostics"] else "complete"
    html = render_report(compare_benchmarks(before, after, check=lambda: None))
    baseline, candidate = _pre_texts(html)[:2]
    assert f"Profiler: {expected} (separate instrumented pass)" in baseline
    assert "not requested" not in baseline.split("Profiler:")[1]
    assert "<h2>Baseline bottleneck evidence</h2>" in html
    # the candidate has none, and its page section and summary agree
    assert "Profiler: not requested (separate instrumented pass)" in candidate
    assert "No operator profile was supplied." in html

    # measure_workload without profile=True says not_requested; a profile attached afterwards is what it holds
    report = measure_workload(workload, device="cpu", metrics=("flops",), print_summary=False)
    assert report["context"]["profile_status"] == "not_requested"
    report["profile"] = before["profile"]
    summary = _pre_texts(render_report(report))[0]
    assert f"Profiler: {expected} (separate instrumented pass)" in summary
    # and a status that claims a profile the report no longer holds says so
    del report["profile"]
    report["context"]["profile_status"] = "complete"
    html = render_report(report)
    summary = _pre_texts(html)[0]
    assert "Profiler: complete, but no profile is attached to this report" in summary
    assert "No operator profile was supplied." in html
