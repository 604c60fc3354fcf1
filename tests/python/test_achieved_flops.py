"""Achieved FLOP/s in measure_workload (issue 19, item 4): the report's own operator FLOPs over its own
warmed latency, and utilisation against the peak the caller declares. Hand arithmetic on the report's
numbers only; no timed assertion."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from torchscan import measure_workload

FAST = {"warmup": 1, "min_run_time": 0.01, "min_repeats": 2, "print_summary": False}


def _linear() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return torch.nn.Linear(16, 8), torch.randn(4, 16)


def test_achieved_and_utilization_are_flops_over_latency() -> None:
    model, x = _linear()
    report = measure_workload(
        lambda: model(x), device="cpu", metrics=("flops", "latency"), peak_flops=2.5e12, **FAST
    )
    totals = report["totals"]
    flops = totals["operator_flops"]["value"]
    assert flops == 2 * 4 * 16 * 8  # addmm: 2*m*n*k
    latency = totals["latency"]["value"]
    achieved = totals["achieved_flops"]
    assert achieved["status"] == "complete"
    assert achieved["value"] == pytest.approx(flops / latency, rel=1e-12)
    assert (achieved["unit"], achieved["scope"], achieved["method"]) == (
        "FLOPs/s",
        "warmed_block_average",
        "operator_flops_over_latency",
    )
    utilization = totals["flops_utilization"]
    assert utilization["status"] == "complete"
    assert utilization["value"] == pytest.approx(flops / latency / 2.5e12, rel=1e-12)
    assert (utilization["unit"], utilization["method"]) == ("fraction", "achieved_over_declared_peak")
    assert report["context"]["peak_flops"] == 2.5e12
    assert not [d for d in report["diagnostics"] if d["code"] == "measurement_unavailable"]


def test_without_a_peak_only_achieved() -> None:
    model, x = _linear()
    report = measure_workload(lambda: model(x), device="cpu", metrics=("flops", "latency", "achieved_flops"), **FAST)
    assert report["totals"]["achieved_flops"]["status"] == "complete"
    assert "flops_utilization" not in report["totals"]
    assert "peak_flops" not in report["context"]


def test_not_requested_by_default() -> None:
    model, x = _linear()
    report = measure_workload(lambda: model(x), device="cpu", metrics=("flops", "latency"), **FAST)
    assert "achieved_flops" not in report["totals"]
    assert "flops_utilization" not in report["totals"]


def _unavailable(report: dict[str, Any], name: str) -> str:
    metric = report["totals"][name]
    assert metric["status"] == "unavailable" and metric["value"] is None, metric
    assert metric["method"] == "unavailable"
    [diagnostic] = [d for d in report["diagnostics"] if d["metric"] == name]
    assert diagnostic["code"] == "measurement_unavailable"
    return diagnostic["message"]


def test_partial_flops_make_it_unavailable() -> None:
    model, x = _linear()
    # aten.sinc has no formula: the FLOPs are a lower bound, and a rate from a lower bound is not given
    report = measure_workload(
        lambda: model(x).sinc(), device="cpu", metrics=("flops", "latency"), peak_flops=1e12, **FAST
    )
    assert report["totals"]["operator_flops"]["status"] == "partial"
    assert report["totals"]["latency"]["status"] == "complete"
    assert "operator FLOPs are partial" in _unavailable(report, "achieved_flops")
    assert "operator FLOPs are partial" in _unavailable(report, "flops_utilization")


def test_no_latency_makes_it_unavailable() -> None:
    model, x = _linear()
    report = measure_workload(lambda: model(x), device="cpu", metrics=("flops",), peak_flops=1e12, **FAST)
    assert report["totals"]["operator_flops"]["status"] == "complete"
    assert 'latency was not measured (select "latency")' in _unavailable(report, "achieved_flops")


def test_no_flops_makes_it_unavailable() -> None:
    model, x = _linear()
    report = measure_workload(lambda: model(x), device="cpu", metrics=("latency", "achieved_flops"), **FAST)
    assert 'operator FLOPs were not measured (select "flops")' in _unavailable(report, "achieved_flops")


def test_both_reasons_are_given() -> None:
    model, x = _linear()
    report = measure_workload(lambda: model(x), device="cpu", metrics=("achieved_flops",), **FAST)
    message = _unavailable(report, "achieved_flops")
    assert "operator FLOPs were not measured" in message and "latency was not measured" in message


@pytest.mark.parametrize(
    ("peak", "error"),
    [
        (0, ValueError),
        (-1.0, ValueError),
        (math.inf, ValueError),
        (math.nan, ValueError),
        (True, TypeError),
        ("1e12", TypeError),
        (torch.tensor(1e12), TypeError),
    ],
)
def test_peak_flops_is_checked_before_the_workload_runs(peak: Any, error: type[Exception]) -> None:
    calls = []
    with pytest.raises(error, match="peak_flops"):
        measure_workload(lambda: calls.append(1), device="cpu", metrics=("flops", "latency"), peak_flops=peak, **FAST)
    assert calls == []


def test_unknown_metric_still_refused() -> None:
    with pytest.raises(ValueError, match="achieved_flops"):
        measure_workload(lambda: None, device="cpu", metrics=("achieved_flop",), **FAST)
