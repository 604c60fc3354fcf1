"""The one check of AnalysisReports read back (src/core/report_check.c): compare_reports refuses a corrupt
report with a ValueError naming the argument and where, and the `torchscan` tool refuses it with exit status
1 and the same words on stderr. A valid report passes untouched."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from torchscan import ModuleHandler, compare_reports, crawl_module

TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))


def _subtree(module, inputs, output):
    return {"module_flops": 1000, "macs": 10}


@pytest.fixture(scope="module")
def report():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    return crawl_module(
        model,
        (4,),
        custom_modules={nn.Sequential: ModuleHandler(_subtree, subtree_metrics=frozenset({"module_flops", "macs"}))},
    )


def _set(path):
    def edit(r):
        *parents, last = path
        node = r
        for key in parents:
            node = node[key]
        node[last] = edit.value

    return edit


# name -> (edit, where the message says the problem is)
HOSTILE = {
    "status-weird": (lambda r: r["layers"][1]["metrics"]["calls"].__setitem__("status", "weird"),
                     "layers[1].metrics.calls.status"),
    "status-missing": (lambda r: r["totals"]["macs"].pop("status"), "totals.macs.status"),
    "complete-known-differs": (lambda r: r["totals"]["parameters"].__setitem__("known_value", 7),
                               "totals.parameters.known_value"),
    "partial-with-value": (lambda r: r["layers"][0]["metrics"]["operator_flops"].update(status="partial"),
                           "layers[0].metrics.operator_flops.value"),
    "unavailable-with-number": (lambda r: r["totals"]["parameters"].update(status="unavailable"),
                                "totals.parameters.value: an unavailable metric needs None"),
    "negative-cost": (lambda r: r["totals"]["buffer_bytes"].update(value=-1, known_value=-1),
                      "totals.buffer_bytes.known_value"),
    "duplicate-call": (lambda r: r["layers"].append(copy.deepcopy(r["layers"][1])), "duplicate layer call ('0', 0)"),
    "cyclic-owners": (lambda r: (r["layers"][0]["metrics"].pop("module_flops"),
                                 r["layers"][0].__setitem__("metric_owners", {"module_flops": {"path": "0", "call_index": 0}}),
                                 r["layers"][1].__setitem__("metric_ownership", {"module_flops": "subtree"})),
                      "layers[0].metric_owners.module_flops: the owners of this metric form a cycle"),
    "owner-missing-row": (lambda r: r["layers"][1]["metric_owners"]["module_flops"].__setitem__("path", "gone"),
                          "layers[1].metric_owners.module_flops: names no row"),
    "owner-call-index-bool": (lambda r: r["layers"][1]["metric_owners"]["module_flops"].__setitem__("call_index", False),
                              "layers[1].metric_owners.module_flops.call_index"),
    "covered-metric-present": (lambda r: r["layers"][1]["metrics"].__setitem__("macs", r["totals"]["macs"]),
                               "layers[1].metrics.macs: a metric covered"),
    "ownership-value": (lambda r: r["layers"][0]["metric_ownership"].__setitem__("macs", "forward"),
                        "layers[0].metric_ownership.macs"),
    "schema-version-true": (lambda r: r.__setitem__("schema_version", True), "schema_version"),
    "schema-version-str": (lambda r: r.__setitem__("schema_version", "1"), "schema_version"),
    "depth-negative": (lambda r: r["layers"][2].__setitem__("depth", -3), "layers[2].depth: expected a non-negative int, got -3"),
    "depth-real": (lambda r: r["layers"][2].__setitem__("depth", 2.0), "layers[2].depth: expected a non-negative int, got 2.0"),
    "empty-path-component": (lambda r: r["layers"][1].__setitem__("path", "bad..path"), "layers[1].path"),
    "devices-not-str": (lambda r: r["context"].__setitem__("devices", [1]), "context.devices[0]"),
    "inputs-not-object": (lambda r: r.__setitem__("inputs", []), "inputs: expected an object"),
    "severity": (lambda r: r["diagnostics"].append({"code": "x", "severity": "fatal", "metric": "m", "message": ""}),
                 "].severity: expected 'warning' or 'error', got 'fatal'"),
    "parameters-negative": (lambda r: r["layers"][1]["parameters"].__setitem__("bytes", -4), "layers[1].parameters.bytes"),
    "buffers-shared": (lambda r: r["layers"][1]["buffers"].__setitem__("shared", 0), "layers[1].buffers.shared"),
    "operator-flops-schema": (lambda r: r["operator_flops"].__setitem__("schema_version", 2), "operator_flops.schema_version"),
    "operator-flops-mismatch": (lambda r: r["operator_flops"]["total"].update(value=1, known_value=1),
                                "totals.operator_flops: must match operator_flops.total"),
    "by-operator-real": (lambda r: r["operator_flops"]["by_operator"].__setitem__("aten.addmm", 1.5),
                         "operator_flops.by_operator.aten.addmm"),
    "ignored-reason": (lambda r: r["operator_flops"]["ignored_operators"].__setitem__("aten.t", {"calls": 1}),
                       "operator_flops.ignored_operators.aten.t.reason"),
    "past-2-63": (lambda r: r["layers"][1]["metrics"]["calls"].update(value=2**63, known_value=2**63),
                  "layers[1].metrics.calls.value: an integer outside the 64-bit range"),
    "negative-past-2-63": (lambda r: r["totals"]["parameters"].update(value=-(2**63) - 1),
                           "totals.parameters.value: an integer outside the 64-bit range"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_compare_reports_refuses_each_hostile_report_naming_where(report, name):
    edit, where = HOSTILE[name]
    broken = copy.deepcopy(report)
    edit(broken)
    snapshot = copy.deepcopy(broken)
    with pytest.raises(ValueError) as before:
        compare_reports(broken, report)
    with pytest.raises(ValueError) as after:
        compare_reports(report, broken)
    assert where in str(before.value) and where in str(after.value)
    assert str(before.value).startswith("before") and str(after.value).startswith("after")
    assert broken == snapshot


def test_the_valid_report_and_ints_past_2_53_pass(report):
    assert compare_reports(report, report)["layers"]["changed"] == []
    big = copy.deepcopy(report)
    # ints past 2^53 are JSON data (the contract refuses no such int); the delta stays exact
    big["totals"]["parameters"].update(value=2**53 + 1, known_value=2**53 + 1)
    diff = compare_reports(report, big)
    assert diff["totals"]["parameters"]["delta"] == 2**53 + 1 - report["totals"]["parameters"]["value"]


def test_the_reference_reading_of_an_unknown_status_is_refused(report):
    # The reference read "weird" as complete with delta 0; only a corrupt report holds it.
    weird = copy.deepcopy(report)
    weird["totals"]["macs"]["status"] = "weird"
    with pytest.raises(ValueError, match=r"after: totals\.macs\.status: expected 'complete', 'partial' or 'unavailable', got 'weird'"):
        compare_reports(report, weird)


def test_schema_version_2_keeps_the_reference_message(report):
    other = copy.deepcopy(report)
    other["schema_version"] = 2
    with pytest.raises(ValueError, match="schema versions differ: 1 != 2"):
        compare_reports(report, other)


# ---- the tool ---------------------------------------------------------------------------------------------------

TOOL_CASES = [n for n in HOSTILE if not n.startswith(("past-2-63", "negative-past"))]


def _tool(*args):
    assert TOOL is not None
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("name", TOOL_CASES)
def test_tool_table_and_compare_refuse_hostile_files(report, tmp_path, name):
    edit, where = HOSTILE[name]
    broken = copy.deepcopy(report)
    edit(broken)
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_text(json.dumps(broken))
    good.write_text(json.dumps(report))
    for args in (("table", str(bad)), ("compare", str(good), str(bad)), ("compare", str(bad), str(good))):
        result = _tool(*args)
        assert result.returncode == 1, (args, result.stderr)
        assert result.stdout == ""
        assert where in result.stderr and str(bad) in result.stderr, result.stderr


def test_tool_names_the_report_of_a_collection(report, tmp_path):
    broken = copy.deepcopy(report)
    broken["layers"][2]["depth"] = -3
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"good": report, "bad": broken}))
    result = _tool("table", str(path))
    assert result.returncode == 1
    assert f"torchscan: {path}: bad: layers[2].depth: expected a non-negative int, got -3" in result.stderr


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_tool_refuses_integers_past_2_63_naming_the_place(report, tmp_path, value):
    broken = copy.deepcopy(report)
    broken["totals"]["parameters"].update(value=value, known_value=value)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(broken, indent=1))
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if str(value) in text)
    for args in (("table", str(path)), ("compare", str(path), str(path))):
        result = _tool(*args)
        assert result.returncode == 1
        assert f"{path}:{line}:" in result.stderr and "64 bits" in result.stderr, result.stderr


def test_tool_accepts_ints_past_2_53(report, tmp_path):
    big = copy.deepcopy(report)
    big["totals"]["parameters"].update(value=2**53 + 1, known_value=2**53 + 1)
    (tmp_path / "a.json").write_text(json.dumps(report))
    (tmp_path / "b.json").write_text(json.dumps(big))
    result = _tool("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == compare_reports(report, big)


def test_a_report_with_control_characters_in_names_and_messages_is_read_back():
    # A module name and a user exception message are any Python str; the crawl copies them into the report,
    # and compare_reports and the table must read what the crawl wrote (the render rule refuses them for display).
    model = nn.Sequential()
    model.add_module("a\x1bb\uffff", nn.Linear(2, 2))

    def failing(call):
        raise ValueError("oops \x1b[31mred\x85")

    report = crawl_module(model, (2,), custom_modules={nn.Linear: ModuleHandler(failing)})
    assert report["layers"][1]["path"] == "a\x1bb\uffff"
    assert "\x1b[31m" in report["diagnostics"][0]["message"]
    diff = compare_reports(report, report)
    assert diff["totals"]["parameters"]["delta"] == 0
