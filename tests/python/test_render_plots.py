"""The benchmark page's pictures (issue #16 item 4): strips and run-order plots of the timed blocks.

Pages are parsed with html5lib in strict mode (any HTML5 parse error fails the test), and the SVG is read back:
the scale of a figure is recovered from its own axis (two tick positions and their labels), and every mark is
checked against the report's numbers, computed here independently (per-call time = block / calls per block;
quartiles with linear interpolation, ``statistics.quantiles(method="inclusive")``).
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics

import html5lib
import pytest
import torch

from torchscan import compare_benchmarks, measure_latency, measure_workload, render_report

from test_benchmark import _metric, synthetic, threads  # noqa: F401 (threads is a fixture)

SVG = "{http://www.w3.org/2000/svg}"
UNITS = {"ns": 1e9, "\u00b5s": 1e6, "ms": 1e3, "s": 1.0}
FAST = dict(min_run_time=0.01, warmup=1)
# Coordinates are written with 2 decimals; a scale recovered from two ticks adds a little more.
PX = 0.03


def parse(html: str):
    """The page as an element tree; html5lib's strict mode raises on any parse error."""
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(html)


def plots(root) -> dict[str, object]:
    found = {}
    for svg in root.iter(f"{SVG}svg"):
        classes = svg.get("class", "").split()
        assert "plot" in classes
        kind = "strip" if "strip" in classes else "run-order"
        assert kind not in found
        found[kind] = svg
    return found


def classes(element) -> list[str]:
    return element.get("class", "").split()


def axes(svg) -> dict[str, tuple]:
    """{"bottom"|"left": (scale, unit)}: scale maps a base value (seconds, block number) to pixels."""
    result = {}
    for axis in svg.iter(f"{SVG}g"):
        if classes(axis) != ["axis"]:
            continue
        domain = next(line for line in axis.iter(f"{SVG}line") if classes(line) == ["domain"])
        side = "bottom" if domain.get("y1") == domain.get("y2") else "left"
        ticks = []
        for tick in axis.iter(f"{SVG}g"):
            if classes(tick) == ["tick"]:
                line = tick.find(f"{SVG}line")
                position = float(line.get("x1") if side == "bottom" else line.get("y1"))
                ticks.append((float(tick.find(f"{SVG}text").text), position, tick.find(f"{SVG}text").text))
        label = next(t for t in axis.iter(f"{SVG}text") if classes(t) == ["axis-label"]).text
        unit = re.search(r"\(([^()]*)\)$", label)
        factor = UNITS[unit.group(1)] if unit else 1.0
        assert len(ticks) >= 2, ticks
        (v0, p0, _), (v1, p1, _) = ticks[0], ticks[-1]
        slope = (p1 - p0) / (v1 - v0)

        def scale(value, v0=v0, p0=p0, slope=slope, factor=factor):
            return p0 + (value * factor - v0) * slope

        result[side] = (scale, unit.group(1) if unit else "", [t[2] for t in ticks])
    return result


def per_call(report) -> list[float]:
    m = report["measurement"]
    return [block / m["number_per_run"] for block in m["raw_times_seconds"]]


def quartiles(values):
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def mark_centre(mark):
    if mark.tag == f"{SVG}circle":
        return float(mark.get("cx")), float(mark.get("cy"))
    assert mark.tag == f"{SVG}rect"
    return float(mark.get("x")) + float(mark.get("width")) / 2, float(mark.get("y")) + float(mark.get("height")) / 2


def series_groups(svg) -> dict[str, object]:
    """The figure's series (children of the svg; the legend's keys are inside the legend)."""
    return {classes(g)[1]: g for g in svg if g.tag == f"{SVG}g" and classes(g)[:1] == ["series"]}


def marks(group) -> list:
    return [el for el in group if "block" in classes(el)]


def text_of(element) -> str:
    return "".join(element.itertext())


def fmt(seconds: float, unit: str) -> str:
    return f"{seconds * UNITS[unit]:.3f} {unit}"


def check_nice(labels: list[str]) -> None:
    """Ticks are equally spaced multiples of 1, 2 or 5 times a power of ten, all with the step's decimals."""
    decimals = {len(t.split(".")[1]) if "." in t else 0 for t in labels}
    assert len(decimals) == 1
    values = [float(t) for t in labels]
    steps = {round(b - a, 12) for a, b in zip(values, values[1:])}
    assert len(steps) == 1
    (step,) = steps
    exponent = math.floor(math.log10(step) + 1e-12)
    assert round(step / 10**exponent, 9) in (1, 2, 5)
    assert decimals == {max(0, -exponent)}
    for value in values:
        assert abs(value / step - round(value / step)) < 1e-9


@pytest.fixture(scope="module")
def latency_report():
    x = torch.randn(16, 16)
    return measure_latency(lambda: x @ x, device="cpu", inputs=x, work_units=16, work_unit="samples", **FAST)


@pytest.fixture(scope="module")
def comparison():
    x = torch.randn(16, 16)
    settings = dict(device="cpu", inputs=x, work_units=16, work_unit="samples", min_repeats=7, **FAST)
    before = measure_latency(lambda: torch.stack([row @ x for row in x]), **settings)
    after = measure_latency(lambda: x @ x, **settings)
    return compare_benchmarks(before, after, check=lambda: None)


# ---------------------------------------------------------------------------------------------------------------
# A single BenchmarkReport
# ---------------------------------------------------------------------------------------------------------------


def test_strip_of_a_real_report(latency_report):
    report = latency_report
    svg = plots(parse(render_report(report)))["strip"]
    scale, unit, labels = axes(svg)["bottom"]
    check_nice(labels)
    values = per_call(report)
    (group,) = series_groups(svg).values()
    dots = marks(group)
    # one dot per timed block, in run order, where the axis puts its per-call time
    assert len(dots) == len(report["measurement"]["raw_times_seconds"]) >= 5
    for dot, value in zip(dots, values):
        assert mark_centre(dot)[0] == pytest.approx(scale(value), abs=PX)
    # the median line is at the report's latency; the box spans the quartiles of the blocks
    latency = report["totals"]["latency"]["value"]
    (median,) = [line for line in group.iter(f"{SVG}line") if classes(line) == ["median"]]
    assert float(median.get("x1")) == pytest.approx(scale(latency), abs=PX)
    q1, q2, q3 = quartiles(values)
    assert q2 == pytest.approx(latency, rel=1e-12)
    assert q3 - q1 == pytest.approx(report["totals"]["latency_iqr"]["value"], rel=1e-9, abs=1e-15)
    (box,) = [r for r in group.iter(f"{SVG}rect") if classes(r) == ["iqr"]]
    assert float(box.get("x")) == pytest.approx(scale(q1), abs=PX)
    assert float(box.get("x")) + float(box.get("width")) == pytest.approx(scale(q3), abs=2 * PX)
    # the accessible name gives the median and the IQR in the axis unit
    name = svg.get("aria-label")
    assert svg.get("role") == "img"
    assert svg[0].tag == f"{SVG}title" and svg[0].text == name
    assert f"median {fmt(latency, unit)}" in name
    assert f"IQR {fmt(report['totals']['latency_iqr']['value'], unit)}" in name
    assert f"{len(values)} timed blocks" in name


def test_run_order_plot_of_a_real_report(latency_report):
    report = latency_report
    svg = plots(parse(render_report(report)))["run-order"]
    found = axes(svg)
    x_scale, x_unit, x_labels = found["bottom"]
    y_scale, y_unit, y_labels = found["left"]
    assert x_unit == "" and all(label.isdigit() for label in x_labels)
    check_nice(y_labels)
    values = per_call(report)
    (group,) = series_groups(svg).values()
    dots = marks(group)
    assert len(dots) == len(values)
    for i, (dot, value) in enumerate(zip(dots, values), start=1):
        x, y = mark_centre(dot)
        assert x == pytest.approx(x_scale(i), abs=PX)
        assert y == pytest.approx(y_scale(value), abs=PX)
    (median,) = [line for line in group.iter(f"{SVG}line") if classes(line) == ["median"]]
    assert float(median.get("y1")) == pytest.approx(y_scale(report["totals"]["latency"]["value"]), abs=PX)
    # the trace joins the blocks in run order
    (trace,) = group.iter(f"{SVG}polyline")
    points = [tuple(map(float, p.split(","))) for p in trace.get("points").split()]
    assert [pytest.approx(p, abs=0.011) for p in points] == [mark_centre(d) for d in dots]
    name = svg.get("aria-label")
    fastest = min(range(len(values)), key=values.__getitem__)
    assert f"fastest {fmt(values[fastest], y_unit)} (block {fastest + 1})" in name
    assert f"first block {fmt(values[0], y_unit)}" in name and f"last block {fmt(values[-1], y_unit)}" in name


def test_each_figure_is_followed_by_its_numbers(latency_report):
    report = latency_report
    html = render_report(report)
    root = parse(html)
    figures = root.findall(".//figure")
    assert len(figures) == 2
    parent = {child: p for p in root.iter() for child in p}
    strip_numbers = None
    for figure in figures:
        siblings = list(parent[figure])
        after = siblings[siblings.index(figure) + 1]
        assert after.tag in ("table", "details")
        assert figure.find("figcaption") is not None and text_of(figure.find("figcaption")).strip()
        if after.tag == "table":
            strip_numbers = after
    # the strip's table: blocks, calls per block, median, IQR as the axis shows them
    cells = [text_of(td) for td in strip_numbers.findall(".//td")]
    unit = axes(plots(root)["strip"])["bottom"][1]
    assert cells[0] == str(len(per_call(report)))
    assert cells[1] == str(report["measurement"]["number_per_run"])
    assert cells[2] == fmt(report["totals"]["latency"]["value"], unit)
    assert cells[3] == fmt(report["totals"]["latency_iqr"]["value"], unit)
    # the per-block table holds every per-call time exactly, as Python writes it
    details = next(d for d in root.iter("details") if "Per-call time of every block" in text_of(d.find("summary")))
    rows = details.findall(".//tr")[1:]
    assert [float(text_of(row[2])) for row in rows] == per_call(report)
    # and the exact tables of the page are still there
    assert "Exact values, methods, and diagnostics" in html and "Raw timing blocks" in html


# ---------------------------------------------------------------------------------------------------------------
# A comparison: one common axis
# ---------------------------------------------------------------------------------------------------------------


def test_comparison_strips_share_one_axis(comparison):
    svg = plots(parse(render_report(comparison)))["strip"]
    assert len([g for g in svg.iter(f"{SVG}g") if classes(g) == ["axis"]]) == 1
    scale, unit, labels = axes(svg)["bottom"]
    check_nice(labels)
    groups = series_groups(svg)
    assert set(groups) == {"baseline", "candidate"}
    name = svg.get("aria-label")
    for key, report in (("baseline", comparison["before"]), ("candidate", comparison["after"])):
        dots = marks(groups[key])
        values = per_call(report)
        assert len(dots) == len(values)
        # circles for the baseline, squares for the candidate: apart without colour
        assert {d.tag for d in dots} == {f"{SVG}circle" if key == "baseline" else f"{SVG}rect"}
        for dot, value in zip(dots, values):
            assert mark_centre(dot)[0] == pytest.approx(scale(value), abs=PX)
        (median,) = [line for line in groups[key].iter(f"{SVG}line") if classes(line) == ["median"]]
        latency = report["totals"]["latency"]["value"]
        assert float(median.get("x1")) == pytest.approx(scale(latency), abs=PX)
        assert f"{key.capitalize()}: {len(values)} blocks" in name
        assert f"median {fmt(latency, unit)}, IQR {fmt(report['totals']['latency_iqr']['value'], unit)}" in name
        label = next(t for t in groups[key].iter(f"{SVG}text") if classes(t) == ["row-label"])
        assert label.text == key.capitalize()


def test_comparison_run_order_has_both_series_and_a_legend(comparison):
    svg = plots(parse(render_report(comparison)))["run-order"]
    found = axes(svg)
    x_scale, y_scale = found["bottom"][0], found["left"][0]
    legend = next(g for g in svg.iter(f"{SVG}g") if classes(g) == ["legend"])
    keys = {text_of(g).strip(): g for g in legend if classes(g)[:1] == ["series"]}
    assert set(keys) == {"Baseline", "Candidate"}
    assert keys["Baseline"].find(f"{SVG}circle") is not None and keys["Candidate"].find(f"{SVG}rect") is not None
    groups = series_groups(svg)
    dashes = set()
    for key, report in (("baseline", comparison["before"]), ("candidate", comparison["after"])):
        values = per_call(report)
        dots = marks(groups[key])
        assert len(dots) == len(values)
        for i, (dot, value) in enumerate(zip(dots, values), start=1):
            assert mark_centre(dot) == (pytest.approx(x_scale(i), abs=PX), pytest.approx(y_scale(value), abs=PX))
        dashes.add(next(groups[key].iter(f"{SVG}polyline")).get("stroke-dasharray"))
    assert len(dashes) == 2  # solid and dashed traces
    assert "Baseline (circles" in svg.get("aria-label") and "Candidate (squares" in svg.get("aria-label")


# ---------------------------------------------------------------------------------------------------------------
# Units, unknown timing, consistency
# ---------------------------------------------------------------------------------------------------------------


def consistent(per_call_seconds: list[float], number: int = 2, **context) -> dict:
    """A BenchmarkReport whose totals are what its blocks give (median and IQR computed here)."""
    q1, q2, q3 = quartiles(per_call_seconds)
    report = synthetic(q2, q3 - q1, **context)
    report["measurement"] = {
        "number_per_run": number,
        "raw_times_seconds": [v * number for v in per_call_seconds],
        "measured_calls": number * len(per_call_seconds),
    }
    # the multiplication above may round: take the per-call values back as the engine reads them
    values = [b / number for b in report["measurement"]["raw_times_seconds"]]
    q1, q2, q3 = quartiles(values)
    report["totals"]["latency"] = _metric(q2)
    report["totals"]["latency_iqr"] = _metric(q3 - q1)
    return report


@pytest.mark.parametrize(
    ("values", "unit"),
    [
        ([52e-9, 48e-9, 50e-9, 61e-9, 49e-9], "ns"),
        ([1.5e-6, 2e-6, 2.5e-6, 3e-6, 2.2e-6], "\u00b5s"),
        ([0.00123, 0.0025, 0.003, 0.0041, 0.00456], "ms"),
        ([2.5, 3.0, 3.25, 2.75, 4.0], "s"),
    ],
)
def test_axis_unit_follows_the_data(values, unit):
    report = consistent(values)
    found = plots(parse(render_report(report)))
    for svg, side in ((found["strip"], "bottom"), (found["run-order"], "left")):
        scale, shown, labels = axes(svg)[side]
        assert shown == unit
        check_nice(labels)
        # the ticks cover the values: the smallest and largest are within one step of the outer ticks
        ticks = [float(t) / UNITS[unit] for t in labels]
        step = ticks[1] - ticks[0]
        assert ticks[0] - step <= min(values) and max(values) <= ticks[-1] + step
        assert len(marks(next(iter(series_groups(svg).values())))) == len(values)


def test_equal_blocks_still_get_an_axis():
    report = consistent([0.004] * 6)
    svg = plots(parse(render_report(report)))["strip"]
    scale, unit, labels = axes(svg)["bottom"]
    assert unit == "ms"
    (group,) = series_groups(svg).values()
    assert [mark_centre(d)[0] for d in marks(group)] == [pytest.approx(scale(0.004), abs=PX)] * 6


def test_no_picture_when_latency_was_not_requested(threads):
    x = torch.randn(8, 8)
    for metrics in (("flops",), ("throughput",)):
        report = measure_workload(lambda: x @ x, device="cpu", metrics=metrics, print_summary=False, **FAST)
        html = render_report(report)
        assert plots(parse(html)) == {}
        assert "No picture of the timed blocks: latency was not requested, so there is no median to draw." in html
    # blocks were timed for the throughput, but the latency total was not requested: nothing drawn in its place
    assert report["measurement"]["raw_times_seconds"]


@pytest.mark.parametrize(
    ("status", "method", "reason"),
    [
        ("partial", "torchscan_blocked_timer", "latency is partial (only a lower bound is known)"),
        ("unavailable", "torchscan_blocked_timer", "latency is unavailable (see the diagnostics)"),
    ],
)
def test_unknown_latency_is_never_drawn(status, method, reason):
    before = consistent([0.010, 0.011, 0.0105, 0.0102, 0.0108])
    after = consistent([0.008, 0.0085, 0.0082, 0.0081, 0.0079])
    after["totals"]["latency"] = _metric(0.008, status=status, method=method)
    html = render_report(compare_benchmarks(before, after, check=lambda: None))
    root = parse(html)
    found = plots(root)
    # the baseline is drawn alone; the candidate has no mark, no box and no median anywhere (never a zero)
    for svg in found.values():
        assert set(series_groups(svg)) == {"baseline"}
        assert "baseline only" in svg.get("aria-label")
    assert f"No picture of the candidate&#x27;s timed blocks: {reason}, so there is no median to draw." in html
    # the strip's x axis starts at the baseline's data, not at zero
    assert axes(found["strip"])["bottom"][0](0.0) < 0


def test_blocks_that_do_not_give_the_reported_latency_are_not_drawn():
    report = synthetic(0.01, 0.001)  # blocks of 0.1 s with 4 calls: 0.025 s per call, not 0.01
    html = render_report(report)
    assert plots(parse(html)) == {}
    assert (
        "No picture of the timed blocks: its timed blocks do not reproduce its latency and IQR (from the blocks: "
        "median 0.025 s, IQR 0.0 s; reported: median 0.01 s, IQR 0.001 s), so they are not drawn as its "
        "measurement."
    ) in html
    report["measurement"]["raw_times_seconds"] = []
    assert "the report holds no timed blocks" in render_report(report)
    report["measurement"] = {}
    assert "the report holds no timed blocks" in render_report(report)
    report["measurement"] = {"number_per_run": 4, "raw_times_seconds": [0.04, -0.04, 0.04]}
    assert "cannot be summarized: Timing must produce positive finite durations." in render_report(report)


# ---------------------------------------------------------------------------------------------------------------
# The page stays script-free, valid, deterministic
# ---------------------------------------------------------------------------------------------------------------


def test_pages_parse_strictly_and_hold_no_script(latency_report, comparison):
    for report in (latency_report, comparison):
        html = render_report(report)
        root = parse(html)
        assert html.startswith("<!DOCTYPE html>")
        csp = root.find(".//meta[@http-equiv='Content-Security-Policy']").get("content")
        assert csp == "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
        for element in root.iter():
            assert not str(element.tag).endswith("script")
            assert not str(element.tag).endswith("foreignObject")
            for name, value in element.attrib.items():
                assert not name.split("}")[-1].lower().startswith("on"), name
                assert "javascript:" not in value.lower()
                assert not name.split("}")[-1] in ("href", "src"), name
        assert "<script" not in html.lower()
    # the strict parser does refuse a broken page, so the parse above means something
    with pytest.raises(html5lib.html5parser.ParseError):
        parse("<!DOCTYPE html><p>a</b>")


def test_rendering_is_deterministic(latency_report, comparison):
    for report in (latency_report, comparison):
        html = render_report(report)
        assert render_report(copy.deepcopy(report)) == html
        assert render_report(json.loads(json.dumps(report))) == html
        assert render_report(report) == html


def test_style_has_dark_and_print_rules(latency_report):
    style = parse(render_report(latency_report)).find(".//style").text
    assert "@media (prefers-color-scheme:dark)" in style and "@media print" in style
    assert "color-scheme:light dark" in style
