"""render_report for AnalysisReports (contract 1.13, 4.1, 4.2): the HTML page, the SVG, validation, golden bytes."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import html5lib
import pytest
import torch
from torch import nn

from torchscan import compare_reports, crawl_module, render_report

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
sys.path.insert(0, str(ROOT / "tools"))
import golden  # noqa: E402
import embed_script  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
VIEWS = ("module_flops", "macs", "dmas", "parameters", "parameter_bytes")


def _report(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text())


def _parse(page: str):
    """A strict HTML5 parse: any parse error raises."""
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)


def _ids_and_links(page: str) -> tuple[list[str], list[str]]:
    ids = re.findall(r'\sid="([^"]+)"', page)
    links = re.findall(r'href="#([^"]*)"', page)
    return ids, links


def _two_leaf_report(a_out: int = 8, b_out: int = 4) -> dict:
    return crawl_module(nn.Sequential(nn.Linear(16, a_out), nn.Linear(a_out, b_out)), (16,))


# ---------------------------------------------------------------------------------------------------------------
# The page: structure, safety, offline
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_page_is_strict_html5_with_unique_ids_and_resolving_links(case):
    page = golden.render(case, "html")
    _parse(page)
    ids, links = _ids_and_links(page)
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert links and set(links) <= set(ids), sorted(set(links) - set(ids))[:5]
    assert not re.search(r"\son[a-z]+=", page), "no on* attribute is generated"
    assert not re.search(r'\s(?:src|srcset|action|formaction)=', page), "no external reference"
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_exactly_two_scripts_and_the_csp_hash_is_the_script(case):
    page = golden.render(case, "html")
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert len(scripts) == 2
    assert scripts[0][0] == ' id="torchscan-data" type="application/json"'
    assert scripts[1][0] == ""
    digest = base64.b64encode(hashlib.sha256(scripts[1][1].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert csp == (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )


def test_embedded_script_matches_its_source():
    assert (ROOT / "src/core/render_script.c").read_text() == embed_script.generate()


def test_data_island_round_trips_and_escapes_hostile_text():
    report = _two_leaf_report()
    hostile = "</script><b>x</b>&\u2028\u2029'\""
    report["layers"][1]["type"] = hostile
    report["context"]["model_type"] = hostile
    page = render_report(report, title=hostile)
    _parse(page)
    island = re.search(r'<script id="torchscan-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in island
    data = json.loads(island)
    assert data["report"] == report
    assert set(data) == {"report", "before", "comparison", "maps", "diagnostics", "before_diagnostics", "suggestions"}
    assert data["before"] is None and data["comparison"] is None
    # caller text is escaped everywhere in the HTML
    assert "<b>x</b>" not in page
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;&amp;" in page


def test_every_number_is_in_the_html_without_script():
    """The five views, totals and per-call values are readable with JavaScript off (text outside scripts)."""
    report = _two_leaf_report()
    page = render_report(report)
    body = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    # Linear(16, 8): 2*16*8 + 8 = 264 FLOPs... as the contract's formula gives (out * (2 * in - 1) + bias out)
    first = report["layers"][1]["metrics"]
    for name in ("module_flops", "macs", "dmas"):
        value = first[name]["value"]
        assert f"complete · {value:,} {first[name]['unit']}" in body
    assert f"complete · {report['totals']['parameters']['value']:,} elements" in body
    for view in VIEWS:
        assert f'id="view-{view}"' in body and f'id="panel-{view}"' in body
    assert body.count('type="radio" name="view"') == 5
    assert 'id="view-module_flops" checked' in body
    assert 'id="view-macs" checked' in render_report(report, metric="macs")


def test_map_widths_are_recorded_contributions_on_one_scale():
    report = _two_leaf_report(8, 4)
    a = report["layers"][1]["metrics"]["module_flops"]["value"]
    b = report["layers"][2]["metrics"]["module_flops"]["value"]
    svg = ET.fromstring(render_report(report, format="svg"))
    widths = {}
    for anchor in svg.iter(f"{SVG_NS}a"):
        if anchor.get("class") == "tile":
            rect = anchor.find(f"{SVG_NS}rect")
            label = anchor.get("aria-label").split(":")[0]
            widths[label] = (float(rect.get("x")), float(rect.get("width")))
    assert widths["(model)"] == (0.0, 960.0)
    assert widths["0"][1] == pytest.approx(960 * a / (a + b), abs=0.01)
    assert widths["1"] == (pytest.approx(widths["0"][1], abs=0.01), pytest.approx(960 * b / (a + b), abs=0.01))
    # the HTML map has the same geometry
    page = render_report(report)
    panel = page.split('id="panel-module_flops"')[1].split("</svg>")[0]
    assert f'width="{960 * a / (a + b):.2f}"' in panel


def test_repeated_calls_share_one_tile():
    shared = nn.Linear(4, 4)
    report = crawl_module(nn.Sequential(shared, nn.ReLU(), shared), (4,))
    page = render_report(report)
    assert "×2 calls" in page
    panel = page.split('id="panel-module_flops"')[1].split("</svg>")[0]
    assert panel.count('data-node="1"') == 1


def test_partial_tiles_are_hatched_and_unknown_goes_to_the_rail():
    report = _report("partial.json")
    page = render_report(report)
    panel = page.split('id="panel-module_flops"')[1].split('id="panel-macs"')[0]
    # the root subtotal is partial: hatched
    assert 'class="hatch"' in panel
    assert "partial · at least 136 FLOPs (lower bound; full value unknown)" in panel
    # module 1 has no formula (partial, nothing known): not drawn as zero, listed as unknown on the rail
    assert "Unknown (unscaled) (1)" in panel
    assert re.search(r'<li><a href="#call-2">1</a> · partial · at least 0 FLOPs', panel)
    svg = render_report(report, format="svg")
    assert "partial · ≥ 0 FLOPs · full value unknown" in svg


def test_structure_mode_draws_an_unscaled_structure_map():
    report = _report("structure.json")
    page = render_report(report)
    assert "no_recorded_measurement · structural · unscaled" in page
    assert "not_requested" in page
    svg = render_report(report, format="svg")
    assert "structural · unscaled" in svg


def test_subtree_owners_cover_their_children():
    report = _report("subtree.json")
    page = render_report(report)
    panel = page.split('id="panel-module_flops"')[1].split('id="panel-macs"')[0]
    assert "Covered by inclusive estimates (4)" in panel
    assert "covered · included in <a href=\"#call-1\">0</a> · call #0 inclusive estimate" in panel
    # covered nodes get no rail entry and no tile in the owner's group
    assert "0.inner" not in panel.split("Covered by inclusive")[0]


def test_operator_flops_section_self_and_inclusive():
    report = _two_leaf_report()
    page = render_report(report)
    section = page.split('id="operator-layers"')[1].split("</section>")[0]
    selfs = [layer["metrics"]["operator_flops"]["value"] for layer in report["layers"]]
    total = report["totals"]["operator_flops"]["value"]
    assert sum(selfs) == total
    rows = re.findall(r"<tr><td>.*?</td><td>(.*?)</td><td>(.*?)</td></tr>", section)
    assert len(rows) == len(report["layers"])
    # the root's inclusive value is the model total; a leaf's inclusive equals its self
    assert rows[0][1] == f"complete · {total:,} FLOPs"
    assert rows[1] == (f"complete · {selfs[1]:,} FLOPs",) * 2


def test_suggestions_link_to_evidence():
    report = _report("cnn.json")
    page = render_report(report)
    largest = max(
        (i for i, layer in enumerate(report["layers"]) if "module_flops" in layer["metrics"]),
        key=lambda i: report["layers"][i]["metrics"]["module_flops"]["value"],
    )
    assert f'<a href="#call-{largest}">Recorded fact: ' in page
    assert "Experiment to try: benchmark latency with measure_latency" in page
    partial = render_report(_report("partial.json"))
    assert "measure_flops(custom_mapping=...)" in partial


def test_deterministic_and_inputs_not_mutated():
    report, before = _report("cnn_wide.json"), _report("cnn.json")
    frozen = copy.deepcopy((report, before))
    first = render_report(report, before=before)
    assert render_report(report, before=before) == first
    assert (report, before) == frozen


# ---------------------------------------------------------------------------------------------------------------
# Before / after
# ---------------------------------------------------------------------------------------------------------------


def test_before_after_pairs_bars_and_lists_changes():
    report, before = _report("cnn_wide.json"), _report("cnn.json")
    page = render_report(report, before=before)
    _parse(page)
    diff = compare_reports(before, report)
    delta = diff["totals"]["module_flops"]["delta"]
    assert f"complete · +{delta:,} FLOPs" in page
    assert 'class="bar-before"' in page and 'class="bar-after"' in page
    assert "Before subtree: complete" in page
    island = json.loads(re.search(r'application/json">(.*?)</script>', page, re.S).group(1))
    assert island["comparison"]["totals"]["module_flops"]["delta"] == delta
    assert 'id="before-call-0"' in page and 'id="before-diagnostics"' in page
    assert "Per-module parameter deltas are withheld" in page


def test_execution_deltas_withheld_with_reasons_storage_still_compared():
    before = _two_leaf_report()
    report = copy.deepcopy(before)
    report["context"]["torch_version"] = "9.9.9"
    report["inputs"]["args"][0]["shape"] = [2, 16]
    page = render_report(report, before=before)
    assert "unavailable · not comparable: inputs, torch_version" in page
    island = json.loads(re.search(r'application/json">(.*?)</script>', page, re.S).group(1))
    totals = island["comparison"]["totals"]
    assert totals["module_flops"]["status"] == "unavailable" and totals["module_flops"]["delta"] is None
    assert totals["parameters"]["status"] == "complete" and totals["parameters"]["delta"] == 0
    # analysis_mode: absent means "full"
    same = copy.deepcopy(before)
    same["context"]["analysis_mode"] = "full"
    assert "not comparable" not in render_report(same, before=before)


def test_compare_reports_errors_propagate():
    before = _two_leaf_report()
    report = copy.deepcopy(before)
    report["layers"][1]["metrics"]["macs"]["method"] = "other"
    with pytest.raises(ValueError, match="incompatible method"):
        render_report(report, before=before)


def test_removed_modules_go_on_the_rail():
    before = crawl_module(nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)), (8,))
    after = crawl_module(nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8)), (8,))
    page = render_report(after, before=before)
    assert "Removed modules (1)" in page.split('id="panel-module_flops"')[1].split('id="panel-macs"')[0]


# ---------------------------------------------------------------------------------------------------------------
# The SVG
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_svg_is_standalone_static_and_links_resolve(case):
    text = golden.render(case, "svg")
    svg = ET.fromstring(text)
    assert svg.tag == f"{SVG_NS}svg" and svg.get("role") == "img"
    assert svg.find(f"{SVG_NS}title").text == f"Golden {case} <&> \u2028"
    tags = {el.tag.replace(SVG_NS, "") for el in svg.iter()}
    assert not tags & {"script", "image", "foreignObject"}
    ids = [el.get("id") for el in svg.iter() if el.get("id")]
    assert len(ids) == len(set(ids))
    links = [el.get("href") for el in svg.iter(f"{SVG_NS}a")]
    assert links and all(link.startswith("#") and link[1:] in ids for link in links)
    assert all(el.get("tabindex") == "0" for el in svg.iter(f"{SVG_NS}a"))
    evidence = next(el for el in svg.iter() if el.get("id") == "svg-evidence")
    data = json.loads(evidence.find(f"{SVG_NS}title").text)
    assert set(data) == {"context", "inputs", "before_diagnostics"}
    tiles = [a for a in svg.iter(f"{SVG_NS}a") if a.get("class") == "tile"]
    for tile in tiles:
        assert "Call evidence:" in tile.find(f"{SVG_NS}title").text
        assert "{" not in tile.get("aria-label")
        assert tile.get("href").startswith("#inspector-")


def test_svg_tile_evidence_is_the_paths_layers():
    report = _two_leaf_report()
    svg = ET.fromstring(render_report(report, format="svg"))
    tile = next(a for a in svg.iter(f"{SVG_NS}a") if a.get("aria-label", "").startswith("0:"))
    evidence = tile.find(f"{SVG_NS}title").text.split(" Call evidence: ", 1)[1]
    assert json.loads(evidence) == [report["layers"][1]]


def test_svg_before_after_inspector_text():
    text = render_report(_report("cnn_wide.json"), format="svg", before=_report("cnn.json"))
    assert "Before subtree: complete" in text and "After subtree: complete" in text
    assert 'id="before-diagnostic-' in text or "Before diagnostics (0)" in text


# ---------------------------------------------------------------------------------------------------------------
# Validation (contract 1.13): every rule, a hostile report each
# ---------------------------------------------------------------------------------------------------------------


def _mutated(mutate) -> dict:
    report = _two_leaf_report()
    mutate(report)
    return report


def _set(path, value):
    def mutate(report):
        target = report
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


HOSTILE = [
    ("schema 2", _set(["schema_version"], 2), "schema_version"),
    ("schema true", _set(["schema_version"], True), "schema_version"),
    ("context not object", _set(["context"], []), "context"),
    ("inputs not object", _set(["inputs"], "x"), "inputs"),
    ("devices not str list", _set(["context", "devices"], [1]), r"context\.devices"),
    ("dtypes not list", _set(["context", "dtypes"], "f32"), r"context\.dtypes"),
    ("status weird", _set(["layers", 1, "metrics", "macs", "status"], "weird"), r"layers\[1\]\.metrics\.macs\.status"),
    ("complete value != known", _set(["layers", 1, "metrics", "macs", "known_value"], 1), r"layers\[1\]\.metrics\.macs"),
    ("partial with value", _set(["totals", "macs", "status"], "partial"), r"totals\.macs"),
    ("unavailable with numbers", _set(["totals", "dmas", "status"], "unavailable"), r"totals\.dmas"),
    ("bool as number", _set(["layers", 1, "metrics", "macs", "value"], True), r"layers\[1\]\.metrics\.macs"),
    ("diagnostics not list", _set(["diagnostics"], {}), "diagnostics"),
    ("severity", _set(["diagnostics"], [{"code": "x", "severity": "fatal", "message": "m"}]), "severity"),
    ("diag path not str", _set(["diagnostics"], [{"code": "x", "severity": "warning", "path": 3}]), "path"),
    ("layers not list", _set(["layers"], {}), "layers"),
    ("empty path component", _set(["layers", 1, "path"], "bad..path"), "bad..path"),
    ("negative depth", _set(["layers", 1, "depth"], -3), r"layers\[1\]\.depth"),
    ("call_index bool", _set(["layers", 1, "call_index"], True), r"layers\[1\]\.call_index"),
    ("duplicate call", _set(["layers", 2, "path"], "0"), "duplicate layer call"),
    ("params negative", _set(["layers", 1, "parameters", "trainable"], -1), r"parameters\.trainable"),
    ("shared not bool", _set(["layers", 1, "parameters", "shared"], 0), r"parameters\.shared"),
    ("operator schema", _set(["operator_flops", "schema_version"], 2), r"operator_flops\.schema_version"),
    (
        "operator total mismatch",
        _set(["operator_flops", "total"], {"status": "complete", "value": 1, "known_value": 1, "unit": "FLOPs", "scope": "workload", "method": "torchscan_dispatch_counter"}),
        "must match",
    ),
    ("by_operator negative", _set(["operator_flops", "by_operator"], {"aten.mm": -1}), "by_operator"),
    ("ignored without reason", _set(["operator_flops", "ignored_operators"], {"aten.view": {"calls": 1}}), "reason"),
    ("ownership value", _set(["layers", 0, "metric_ownership"], {"module_flops": "everything"}), "metric_ownership"),
    (
        "owner points nowhere",
        _set(["layers", 1, "metric_owners"], {"module_flops": {"path": "nope", "call_index": 0}}),
        "metric_owners",
    ),
    (
        "owner call_index bool",
        _set(["layers", 1, "metric_owners"], {"module_flops": {"path": "", "call_index": False}}),
        "call_index",
    ),
    ("negative cost", _set(["layers", 1, "metrics", "macs"], {"status": "complete", "value": -5, "known_value": -5, "unit": "MACs", "scope": "module_call", "method": "torchscan_module_formula"}), "negative"),
    ("control character", _set(["layers", 1, "type"], "Lin\x07ear"), r"layers\[1\]\.type: text holds a control character"),
    ("noncharacter", _set(["layers", 1, "type"], "Lin\ufffeear"), "U\\+FFFE"),
]


@pytest.mark.parametrize("name, mutate, where", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_hostile_report_is_refused_naming_where(name, mutate, where):
    report = _mutated(mutate)
    for fmt in ("html", "svg"):
        with pytest.raises(ValueError, match=where):
            render_report(report, format=fmt)
    with pytest.raises(ValueError, match=where):
        render_report(_two_leaf_report(), before=report)


def test_cyclic_ownership_is_refused():
    report = _report("subtree.json")
    # 0 covers 0.inner, and 0.inner now claims to cover 0: a cycle of owners
    owner = report["layers"][1]
    inner = report["layers"][2]
    inner["metric_ownership"] = {"dmas": "subtree"}
    owner["metric_owners"] = {"dmas": {"path": "0.inner", "call_index": 0}}
    inner["metric_owners"]["dmas"] = {"path": "0", "call_index": 0}
    owner["metric_ownership"]["dmas"] = "subtree"
    owner["metrics"].pop("dmas", None)
    inner["metrics"].pop("dmas", None)
    with pytest.raises(ValueError, match=r"layers\[1\]\.metric_owners\.dmas: the owners of this metric form a cycle"):
        render_report(report)


def test_numbers_past_2_53_render_exactly_and_past_2_63_are_refused():
    big = 2**53 + 1
    report = _two_leaf_report()
    metric = report["layers"][1]["metrics"]["macs"]
    metric["value"] = metric["known_value"] = big
    report["totals"]["macs"]["value"] = report["totals"]["macs"]["known_value"] = big + report["layers"][2]["metrics"]["macs"]["value"]
    page = render_report(report, metric="macs")
    assert f"complete · {big:,} MACs" in page
    metric["value"] = metric["known_value"] = 2**63
    with pytest.raises(ValueError, match=r"layers\[1\]\.metrics\.macs"):
        render_report(report)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"format": None}, "format"),
        ({"format": ["html"]}, "format"),
        ({"format": "pdf"}, "format"),
        ({"metric": "operator_flops"}, "metric"),
        ({"metric": None}, "metric"),
        ({"title": 3}, "title"),
        ({"title": "a\x00b"}, "title"),
        ({"title": "a\x1bb"}, "title"),
        ({"before": [1]}, "before"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        render_report(_two_leaf_report(), **kwargs)


def test_non_json_data_is_refused():
    report = _two_leaf_report()
    report["context"]["x"] = float("nan")
    with pytest.raises(ValueError):
        render_report(report)
    report = _two_leaf_report()
    report["context"]["x"] = {1: "a"}
    with pytest.raises((ValueError, TypeError)):
        render_report(report)
    report = _two_leaf_report()
    report["context"]["x"] = report["context"]
    with pytest.raises(ValueError):
        render_report(report)


# ---------------------------------------------------------------------------------------------------------------
# Golden bytes, from Python and from `torchscan render`
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "svg"])
@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_golden_bytes(case, fmt):
    expected = (GOLDEN / f"{case}.{fmt}").read_text(encoding="utf-8")
    assert golden.render(case, fmt) == expected, f"run `python tools/golden.py pages` after an intended change"


TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))


def _render_cli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert TOOL is not None, "the torchscan tool is installed next to the interpreter"
    return subprocess.run([TOOL, "render", *args], input=input, capture_output=True, check=False, timeout=120)


@pytest.mark.parametrize("fmt", ["html", "svg"])
@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_golden_bytes_from_the_command_line(case, fmt):
    report_file, before_file, metric = golden.CASES[case]
    args = [str(GOLDEN / report_file), "--format", fmt, "--metric", metric, "--title", f"Golden {case} <&> \u2028"]
    if before_file:
        args += ["--before", str(GOLDEN / before_file)]
    result = _render_cli(*args)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == (GOLDEN / f"{case}.{fmt}").read_bytes()


def test_command_line_reads_stdin_and_a_collection(tmp_path):
    report, before = _report("cnn_wide.json"), _report("cnn.json")
    collection = tmp_path / "pair.json"
    collection.write_text(json.dumps({"a": report, "b": before}))
    result = _render_cli("-", "--metric", "dmas", input=json.dumps(report).encode())
    assert result.returncode == 0 and result.stdout.decode() == render_report(report, metric="dmas")
    result = _render_cli(str(collection), "--name", "a", "-o", str(tmp_path / "out.html"))
    assert result.returncode == 0 and result.stdout == b""
    assert (tmp_path / "out.html").read_text() == render_report(report)
    assert _render_cli(str(collection)).returncode == 2  # a collection needs --name


def test_command_line_refusals_name_the_file_and_where(tmp_path):
    bad = _two_leaf_report()
    bad["layers"][1]["metrics"]["macs"]["status"] = "weird"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    result = _render_cli(str(path))
    assert result.returncode == 1 and result.stdout == b""
    assert f"{path}: report: layers[1].metrics.macs.status" in result.stderr.decode()
    big = json.dumps(_two_leaf_report()).replace('"value": 1,', f'"value": {2**63},', 1)
    result = _render_cli("-", input=big.encode())
    assert result.returncode == 1 and "integers must fit in 64 bits" in result.stderr.decode()
    assert _render_cli(str(path), "--metric", "operator_flops").returncode == 2
    assert _render_cli(str(path), "--format", "pdf").returncode == 2


def test_command_line_renders_benchmark_pages(tmp_path):
    from test_benchmark import synthetic

    report = synthetic(0.01, 0.001)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(report))
    result = _render_cli(str(path), "--title", "Bench")
    assert result.returncode == 0 and result.stdout.decode() == render_report(report, title="Bench")
    assert _render_cli(str(path), "--format", "svg").returncode == 2


# ---------------------------------------------------------------------------------------------------------------
# Edge cases found in review
# ---------------------------------------------------------------------------------------------------------------


def test_svg_comparison_with_a_before_without_diagnostics():
    before = _report("cnn.json")
    del before["diagnostics"]
    svg = ET.fromstring(render_report(_report("cnn_wide.json"), before=before, format="svg"))
    evidence = next(el for el in svg.iter() if el.get("id") == "svg-evidence")
    assert json.loads(evidence.find(f"{SVG_NS}title").text)["before_diagnostics"] is None


def test_a_container_never_called_is_not_a_removed_module():
    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.h = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

        def forward(self, x):
            for block in self.h:
                x = block(x)
            return x

    report = crawl_module(Stack(), (4,))
    assert "h" not in {layer["path"] for layer in report["layers"]}  # the ModuleList has no row
    page = render_report(report, before=report)
    assert "Removed modules" not in page
    assert "removed · before" not in render_report(report, before=report, format="svg")


def test_inclusive_operator_flops_follow_module_paths_for_shared_modules():
    class Inner(nn.Module):
        def __init__(self, shared: nn.Module) -> None:
            super().__init__()
            self.c = nn.Linear(4, 4)
            self.__dict__["shared"] = shared  # called here, registered elsewhere

        def forward(self, x):
            return self.c(self.shared(x))

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = Inner(self.a)

        def forward(self, x):
            return self.b(self.a(x))

    report = crawl_module(Outer(), (4,))
    flops = {(layer["path"], layer["call_index"]): layer["metrics"]["operator_flops"]["value"] for layer in report["layers"]}
    section = render_report(report).split('id="operator-layers"')[1].split("</section>")[0]
    rows: dict[str, str] = {}
    for path, inclusive in re.findall(r'<tr><td><a href="#call-\d+">([^<]*)</a> call #\d+</td><td>.*?</td><td>(.*?)</td></tr>', section):
        rows.setdefault(path, inclusive)  # a module's first call carries its inclusive value
    # per module path: a's two calls, b's own work and b.c (a's second call ran inside b but counts under a)
    assert rows["a"] == f"complete · {flops[('a', 0)] + flops[('a', 1)]:,} FLOPs"
    assert rows["b"] == f"complete · {flops[('b', 0)] + flops[('b.c', 0)]:,} FLOPs"
    assert rows["(model)"] == f"complete · {sum(flops.values()):,} FLOPs"


def test_withheld_deltas_are_not_drawn():
    before = _two_leaf_report(8, 4)
    after = _two_leaf_report(16, 4)
    compared = render_report(after, before=before)
    assert re.search(r'class="box (up|down)\d"', compared) and 'class="bar-after"' in compared
    after["context"]["torch_version"] = "0.0.1"
    withheld = render_report(after, before=before)
    assert not re.search(r'class="box (up|down)\d"', withheld) and 'class="bar-after"' not in withheld
    panel = compared.split('id="panel-parameters"')[1]
    assert not re.search(r'class="box (up|down)\d"', panel.split("</svg>")[0])


def test_paths_deeper_than_a_page_draws_are_refused():
    report = _two_leaf_report()
    report["layers"][1]["path"] = ".".join(["m"] * 1001)
    with pytest.raises(ValueError, match=r"report: layers\[1\]\.path: more than 1000 modules deep"):
        render_report(report)


def test_a_diagnostic_without_a_path_is_not_attached_to_the_root_call():
    report = _report("partial.json")
    page = render_report(report)
    root_details = page.split('<details id="call-0">')[1].split("</details>")[0]
    assert "uncounted_operator" not in root_details  # the operator diagnostic names no module
    assert 'id="diagnostic-4"' in page and "uncounted_operator" in page


def test_command_line_before_collection_and_bad_title(tmp_path):
    collection = tmp_path / "pair.json"
    collection.write_text(json.dumps({"a": _report("cnn.json"), "b": _report("cnn_wide.json")}))
    one = str(GOLDEN / "cnn.json")
    result = _render_cli(one, "--before", str(collection))
    assert result.returncode == 2 and "--name" in result.stderr.decode()
    assert _render_cli(one, "--title", "a\x1bb").returncode == 2
    bad_before = _two_leaf_report()
    bad_before["layers"][1]["depth"] = -1
    path = tmp_path / "bad_before.json"
    path.write_text(json.dumps(bad_before))
    result = _render_cli(one, "--before", str(path))
    assert result.returncode == 1 and f"{path}: layers[1].depth" in result.stderr.decode()
