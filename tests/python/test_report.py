"""Report primitives (contract 1.1): metric_result invariants, IncompleteAnalysisError, package surface."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import torchscan
from torchscan import IncompleteAnalysisError, crawl_module, metric_result

from conftest import UnsupportedLeaf


def test_complete_forces_known_value():
    assert metric_result(status="complete", unit="FLOPs", scope="forward", method="m", value=5, known_value=99) == {
        "status": "complete",
        "value": 5,
        "known_value": 5,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "m",
    }
    # zero is a legitimate complete value
    assert metric_result(status="complete", unit="FLOPs", scope="s", method="m", value=0)["known_value"] == 0


def test_partial_forces_value_none():
    result = metric_result(status="partial", unit="FLOPs", scope="s", method="m", value=7, known_value=3)
    assert result["value"] is None and result["known_value"] == 3


def test_unavailable_drops_numbers():
    result = metric_result(status="unavailable", unit="FLOPs", scope="s", method="m", value=7, known_value=3)
    assert result["value"] is None and result["known_value"] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(status="complete"), "A complete metric requires a value."),
        (dict(status="partial", value=3), "A partial metric requires a known_value lower bound."),
        (dict(status="done", value=3), "status must be 'complete', 'partial', or 'unavailable'."),
    ],
)
def test_metric_result_errors(kwargs, message):
    with pytest.raises(ValueError) as info:
        metric_result(unit="FLOPs", scope="s", method="m", **kwargs)
    assert str(info.value) == message


def test_incomplete_analysis_error_from_report():
    report = crawl_module(nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf()), (4,))
    error = IncompleteAnalysisError(report)
    assert isinstance(error, RuntimeError)
    assert error.report is report
    assert str(error) == "Analysis is incomplete for: dmas, macs, module_flops, receptive_field."
    with pytest.raises(IncompleteAnalysisError) as info:
        crawl_module(nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf()), (4,), strict=True)
    assert str(info.value) == str(error)


def test_incomplete_analysis_error_message_names_operator_metric():
    report = crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32))
    broken = copy.deepcopy(report)
    broken["diagnostics"].append(
        {"code": "uncounted_operator", "severity": "warning", "metric": "flops", "message": "x", "operator": "aten.x"}
    )
    assert str(IncompleteAnalysisError(broken)) == "Analysis is incomplete for: flops."


def test_incomplete_analysis_error_with_nothing_incomplete():
    report = crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32))
    message = str(IncompleteAnalysisError(report))
    assert message.startswith("Analysis is incomplete for: ") and "unknown metrics" in message


def test_package_surface():
    for name in (
        "crawl_module",
        "summary",
        "measure_flops",
        "compare_reports",
        "metric_result",
        "IncompleteAnalysisError",
        "AnalysisReport",
        "LayerReport",
        "MetricResult",
        "Diagnostic",
        "FlopReport",
        "ReportDiff",
    ):
        assert hasattr(torchscan, name), name
    assert torchscan.crawler.crawl_module is torchscan.crawl_module
    from torchscan.process import measure_peak_memory  # noqa: F401

    assert isinstance(torchscan.__version__, str) and torchscan.__version__ != "unknown"


def test_strict_names_operator_metrics():
    import torch

    class RandomNoise(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) + torch.digamma(x)  # digamma has no FLOP formula

    with pytest.raises(IncompleteAnalysisError) as info:
        crawl_module(RandomNoise(), (4,), strict=True)
    # the operator total is partial; the uncounted_operator diagnostic has metric "flops"
    assert str(info.value) == "Analysis is incomplete for: flops, operator_flops."
    total = info.value.report["totals"]["operator_flops"]
    # known: addmm 2*1*4*4 = 32 plus the add of 4 elements (digamma uncounted)
    assert total["status"] == "partial" and total["known_value"] == 36
    assert info.value.report["totals"]["module_flops"]["status"] == "complete"


def test_a_total_past_the_int64_range_is_unavailable_with_a_diagnostic():
    # each Linear(1024, 1024) on (2**40, 1024): 2**50 outputs * (2*1024 - 1) + 2**50 = 2**61 FLOPs;
    # four rows sum to 2**63, one past int64; the MACs (4 * 2**60) still fit
    model = nn.Sequential(*[nn.Linear(2**10, 2**10, device="meta") for _ in range(4)])
    report = crawl_module(model, args=(torch.empty(2**40, 2**10, device="meta"),))
    assert [row["metrics"]["module_flops"]["value"] for row in report["layers"][1:]] == [2**61] * 4
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    assert report["totals"]["macs"] == metric_result(
        status="complete", value=2**62, unit="MACs", scope="forward", method="torchscan_module_formula"
    )
    overflow = [d for d in report["diagnostics"] if d["metric"] == "module_flops"]
    assert overflow == [
        {
            "code": "module_metric_error",
            "severity": "warning",
            "metric": "module_flops",
            "message": "OverflowError: the module_flops total exceeds the int64 or float range",
        }
    ]
