"""compare_reports (contract 1.5)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from torchscan import compare_reports, crawl_module

from conftest import UnsupportedLeaf, json_roundtrip


@pytest.fixture(scope="module")
def narrow():
    torch.manual_seed(0)
    return crawl_module(nn.Sequential(nn.Linear(4, 4)), (4,))


@pytest.fixture(scope="module")
def wide():
    torch.manual_seed(0)
    return crawl_module(nn.Sequential(nn.Linear(4, 8)), (4,))


@pytest.fixture(scope="module")
def longer():
    torch.manual_seed(0)
    return crawl_module(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), (4,))


def test_identical_reports_have_zero_deltas_and_no_layer_changes(narrow):
    diff = compare_reports(narrow, copy.deepcopy(narrow))
    assert diff["schema_version"] == 1
    assert diff["layers"] == {"added": [], "removed": [], "changed": []}
    # totals diff every metric, changed or not
    assert set(diff["totals"]) == set(narrow["totals"])
    for name, entry in diff["totals"].items():
        assert entry["status"] == "complete" and entry["delta"] == 0, name
        assert entry["before"] == narrow["totals"][name] and entry["after"] == narrow["totals"][name]


def test_changed_layer_and_total_deltas(narrow, wide):
    diff = compare_reports(narrow, wide)
    totals = diff["totals"]
    # parameters: Linear(4, 8) 40 - Linear(4, 4) 20
    assert totals["parameters"]["delta"] == 20
    assert totals["parameter_bytes"]["delta"] == 80
    # module FLOPs on (1, 4): O*(2*4 - 1) + O: 8*8 = 64 vs 4*8 = 32
    assert totals["module_flops"] == {
        "status": "complete",
        "delta": 32,
        "before": narrow["totals"]["module_flops"],
        "after": wide["totals"]["module_flops"],
    }
    # MACs in*O: 32 - 16 ; DMAs N + P + O: (4 + 40 + 8) - (4 + 20 + 4) = 24
    assert totals["macs"]["delta"] == 16
    assert totals["dmas"]["delta"] == 24
    # operator addmm 2*1*O*4: 64 - 32
    assert totals["operator_flops"]["delta"] == 32
    assert diff["layers"]["added"] == [] and diff["layers"]["removed"] == []
    (changed,) = diff["layers"]["changed"]  # the root Sequential has only "calls", unchanged
    assert changed["path"] == "0" and changed["call_index"] == 0
    # only the metrics that changed (calls and the receptive-field trio did not)
    assert set(changed["metrics"]) == {"module_flops", "macs", "dmas", "operator_flops"}
    assert changed["metrics"]["module_flops"]["delta"] == 32
    assert changed["metrics"]["operator_flops"]["delta"] == 32  # the layer's own addmm
    assert changed["metrics"]["macs"]["delta"] == 16
    assert changed["metrics"]["dmas"]["delta"] == 24
    json.dumps(diff, allow_nan=False)


def test_added_and_removed_layers(narrow, longer):
    diff = compare_reports(narrow, longer)
    (added,) = diff["layers"]["added"]
    assert added["path"] == "1" and added["call_index"] == 0
    assert added["metrics"] == longer["layers"][2]["metrics"]
    assert diff["layers"]["removed"] == [] and diff["layers"]["changed"] == []
    # the ReLU adds 4 module FLOPs (one comparison per element)
    assert diff["totals"]["module_flops"]["delta"] == 4

    reverse = compare_reports(longer, narrow)
    (removed,) = reverse["layers"]["removed"]
    assert removed == added
    assert reverse["layers"]["added"] == []
    assert reverse["totals"]["module_flops"]["delta"] == -4


def test_partial_metric_has_no_delta(narrow):
    partial = crawl_module(nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf()), (4,))
    diff = compare_reports(narrow, partial)
    entry = diff["totals"]["module_flops"]
    assert entry["status"] == "partial" and entry["delta"] is None
    assert entry["after"]["status"] == "partial"
    assert diff["totals"]["parameters"]["status"] == "complete" and diff["totals"]["parameters"]["delta"] == 0
    added = {layer["path"] for layer in diff["layers"]["added"]}
    assert added == {"1"}


def test_unavailable_and_missing_metrics(narrow):
    structure = crawl_module(nn.Sequential(nn.Linear(4, 4)), (4,), mode="structure")
    # structure totals use method "not_requested": the compute metrics differ in method and are incompatible
    with pytest.raises(ValueError, match="incompatible"):
        compare_reports(narrow, structure)
    # both in structure mode: unavailable on both sides, no delta
    diff = compare_reports(structure, copy.deepcopy(structure))
    assert diff["totals"]["module_flops"]["status"] == "unavailable" and diff["totals"]["module_flops"]["delta"] is None
    assert diff["totals"]["parameters"]["delta"] == 0
    # a metric present on one side only is unavailable
    after = copy.deepcopy(narrow)
    del after["totals"]["dmas"]
    entry = compare_reports(narrow, after)["totals"]["dmas"]
    assert entry["status"] == "unavailable" and entry["delta"] is None and entry["after"] is None
    assert entry["before"] == narrow["totals"]["dmas"]


def test_schema_version_errors(narrow):
    other = copy.deepcopy(narrow)
    other["schema_version"] = 2
    with pytest.raises(ValueError, match="schema versions differ: 1 != 2"):
        compare_reports(narrow, other)
    with pytest.raises(ValueError, match="schema versions differ: 2 != 1"):
        compare_reports(other, narrow)
    with pytest.raises(ValueError, match="unsupported schema version: 2"):
        compare_reports(other, copy.deepcopy(other))


def test_duplicate_layer_call_error(narrow):
    duplicated = copy.deepcopy(narrow)
    duplicated["layers"].append(copy.deepcopy(duplicated["layers"][1]))
    with pytest.raises(ValueError, match="duplicate layer call"):
        compare_reports(narrow, duplicated)
    with pytest.raises(ValueError, match="duplicate layer call"):
        compare_reports(duplicated, narrow)


@pytest.mark.parametrize("field", ["unit", "scope", "method"])
def test_incompatible_metric_fields(narrow, field):
    after = copy.deepcopy(narrow)
    after["totals"]["module_flops"][field] = "something-else"
    with pytest.raises(ValueError, match=f"metric 'module_flops' has incompatible {field}"):
        compare_reports(narrow, after)
    layer_after = copy.deepcopy(narrow)
    layer_after["layers"][1]["metrics"]["macs"][field] = "something-else"
    with pytest.raises(ValueError, match=f"metric 'macs' has incompatible {field}"):
        compare_reports(narrow, layer_after)


def test_inputs_are_not_mutated_and_result_is_independent(narrow, longer):
    before_copy, after_copy = copy.deepcopy(narrow), copy.deepcopy(longer)
    diff = compare_reports(narrow, longer)
    assert narrow == before_copy and longer == after_copy
    # the result holds copies: mutating it does not touch the inputs
    diff["totals"]["parameters"]["before"]["value"] = -1
    diff["layers"]["added"][0]["metrics"]["calls"]["value"] = -1
    assert narrow == before_copy and longer == after_copy
    # deterministic and JSON-serializable
    assert compare_reports(narrow, longer) == compare_reports(copy.deepcopy(narrow), copy.deepcopy(longer))
    assert json_roundtrip(compare_reports(narrow, longer)) == compare_reports(narrow, longer)


def test_shared_calls_are_matched_by_call_index():
    class Twice(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.lin = nn.Linear(4, width)
            self.proj = nn.Linear(width, 4)

        def forward(self, x, repeats=2):
            for _ in range(repeats):
                x = self.proj(self.lin(x))
            return x

    two = crawl_module(Twice(4), args=(torch.rand(1, 4),))
    three = crawl_module(Twice(4), args=(torch.rand(1, 4), 3))
    diff = compare_reports(two, three)
    added = sorted((layer["path"], layer["call_index"]) for layer in diff["layers"]["added"])
    assert added == [("lin", 2), ("proj", 2)]
    assert diff["layers"]["changed"] == [] and diff["layers"]["removed"] == []


@pytest.mark.parametrize("bad", [None, 1, "report", [], {"schema_version": 1}])
def test_malformed_reports_raise_clean_errors(narrow, bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        compare_reports(narrow, bad)
    with pytest.raises((TypeError, ValueError, KeyError)):
        compare_reports(bad, narrow)


MALFORMED = {
    "layers-not-a-list": lambda r: r.__setitem__("layers", {"a": 1}),
    "layer-not-an-object": lambda r: r["layers"].__setitem__(0, 5),
    "layer-without-path": lambda r: r["layers"][0].pop("path"),
    "call-index-not-int": lambda r: r["layers"][1].__setitem__("call_index", "0"),
    "metrics-not-an-object": lambda r: r["layers"][1].__setitem__("metrics", [1]),
    "metric-not-an-object": lambda r: r["layers"][1]["metrics"].__setitem__("macs", 3),
    "metric-without-status": lambda r: r["totals"]["macs"].pop("status"),
    "complete-value-not-a-number": lambda r: r["layers"][1]["metrics"]["macs"].__setitem__("value", "3"),
    "value-beyond-int64": lambda r: r["layers"][1]["metrics"]["macs"].__setitem__("value", 10**30),
    "value-nan": lambda r: r["totals"]["macs"].__setitem__("value", float("nan")),
    "totals-missing": lambda r: r.pop("totals"),
    "schema-version-str": lambda r: r.__setitem__("schema_version", "1"),
    "schema-version-bool": lambda r: r.__setitem__("schema_version", True),
    # the engine reads names as C strings: "a\0b" would be read as "a"
    "nul-in-a-path": lambda r: r["layers"][1].__setitem__("path", "lin\x00x"),
    "nul-in-a-metric-name": lambda r: r["totals"].__setitem__("macs\x00x", r["totals"]["macs"]),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_report_fields_raise_value_error(narrow, name):
    broken = copy.deepcopy(narrow)
    MALFORMED[name](broken)
    snapshot = copy.deepcopy(broken)
    with pytest.raises((ValueError, TypeError)):
        compare_reports(narrow, broken)
    with pytest.raises((ValueError, TypeError)):
        compare_reports(broken, narrow)
    assert broken == snapshot or name == "value-nan"  # NaN != NaN; everything else is untouched
