"""measure_workload (contract 1.12, variant B) and its terminal summary (5.2); the seed's example E9."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import torchscan
from torchscan import compare_benchmarks, measure_workload

from conftest import json_roundtrip

TOTALS = ["first_call_latency", "latency", "latency_iqr", "throughput", "operator_flops", "peak_memory", "process_peak_rss"]
FAST = {"min_run_time": 0.01, "warmup": 1}


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return torch.ones(8).cos()


def _linear_sinc():
    model = torch.nn.Linear(4, 2).double()
    x = torch.randn(3, 4, dtype=torch.float64)

    def workload():
        with torch.no_grad():
            return model(x).sinc()

    return model, x, workload


# ---------------------------------------------------------------------------------------------------------------
# E9, as the docs type it
# ---------------------------------------------------------------------------------------------------------------


def test_e9_one_call_workload_report(capsys):
    model = torch.nn.Linear(4, 2).double()
    x = torch.randn(3, 4, dtype=torch.float64)

    def workload():
        with torch.no_grad():
            return model(x).sinc()

    report = measure_workload(workload, device="cpu", inputs=x, work_units=3)
    out = capsys.readouterr().out
    assert list(report["totals"]) == TOTALS
    assert "ms" in out and "samples/s" in out and "MiB" in out
    flops = report["totals"]["operator_flops"]
    sinc_uncounted = any(d.get("operator") == "aten.sinc" for d in report["diagnostics"])
    if flops["status"] == "partial":
        assert "partial (known lower bound:" in out
    assert ("aten.sinc" in out) == sinc_uncounted
    assert json_roundtrip(report) == report


# ---------------------------------------------------------------------------------------------------------------
# The reference's pinned end-to-end test
# ---------------------------------------------------------------------------------------------------------------


def test_pinned_end_to_end(capsys):
    model = torch.nn.Linear(4, 2).double().train()
    x = torch.randn(3, 4, dtype=torch.float64)
    calls = []

    def workload():
        calls.append(1)
        with torch.no_grad():
            return model(x).sinc()

    threads = torch.get_num_threads()
    report = measure_workload(
        workload,
        device="cpu",
        inputs=x,
        work_units=3,
        profile=True,
        rss_command=[sys.executable, "-c", "pass"],
        min_run_time=0.05,
    )
    out = capsys.readouterr().out
    # the caller's state is the caller's
    assert model.training and model.weight.dtype == torch.float64
    assert torch.get_num_threads() == threads
    assert len(calls) > 3
    assert report["inputs"]["shape"] == [3, 4]
    totals = report["totals"]
    assert list(totals) == TOTALS
    assert totals["latency"]["status"] == "complete"
    assert totals["throughput"]["unit"] == "samples/s"
    assert totals["operator_flops"] == report["operator_flops"]["total"]
    if totals["operator_flops"]["status"] == "partial":  # aten.sinc has no formula (yet)
        assert totals["operator_flops"]["known_value"] > 0
        assert "partial (known lower bound:" in out and "aten.sinc" in out
    assert totals["peak_memory"]["value"] == report["memory"]["peak_bytes"] > 0
    assert totals["peak_memory"]["scope"] == "pytorch_tensor_bytes"
    assert report["profile"]["operators"]
    assert report["context"]["profile_status"] == "complete"
    assert totals["process_peak_rss"]["status"] == "complete"
    assert totals["process_peak_rss"]["method"] == "wait4.ru_maxrss"
    for text in ("ms", "samples/s", "MiB", "Scope: fresh child process lifetime", "Profiler: complete"):
        assert text in out
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    # the summary is the engine's formatting of this very report
    assert out.rstrip("\n") == torchscan._engine.workload_summary(report)


def test_no_metrics_makes_no_call():
    workload = Counting()
    report = measure_workload(workload, device="cpu", metrics=(), print_summary=False)
    assert workload.calls == 0
    assert list(report["totals"]) == TOTALS
    for name, metric in report["totals"].items():
        assert metric["status"] == "unavailable", name
        assert metric["method"] == "not_requested", name
    assert report["measurement"] == {}
    assert report["context"]["profile_status"] == "not_requested"
    assert report["diagnostics"] == []
    placeholders = {name: (m["unit"], m["scope"]) for name, m in report["totals"].items()}
    assert placeholders == {
        "first_call_latency": ("seconds", "first_call"),
        "latency": ("seconds", "warmed_block_average"),
        "latency_iqr": ("seconds", "warmed_block_average"),
        "throughput": ("samples/s", "warmed_blocks"),
        "operator_flops": ("FLOPs", "workload"),
        "peak_memory": ("bytes", "workload"),
        "process_peak_rss": ("bytes", "child_process_lifetime"),
    }


def test_only_throughput_keeps_latency_not_requested(capsys):
    report = measure_workload(Counting(), device="cpu", metrics=["throughput"], **FAST)
    totals = report["totals"]
    assert totals["throughput"]["status"] == "complete"
    for name in ("first_call_latency", "latency", "latency_iqr", "operator_flops", "peak_memory"):
        assert totals[name]["method"] == "not_requested", name
    assert report["measurement"]["number_per_run"] >= 1  # timing ran
    out = capsys.readouterr().out
    assert "Latency (block median): unavailable (not requested)" in out


def test_comparison_of_copy_and_no_op():
    inputs = torch.ones(256)
    settings = dict(device="cpu", inputs=inputs, metrics=("latency", "memory"), print_summary=False, **FAST)
    copy = measure_workload(lambda: inputs.clone(), **settings)
    noop = measure_workload(lambda: None, **settings)
    assert copy["totals"]["peak_memory"]["status"] == "complete"
    assert copy["totals"]["peak_memory"]["value"] == 1024
    memory = noop["totals"]["peak_memory"]
    assert (memory["status"], memory["scope"], memory["method"]) == (
        "unavailable",
        "pytorch_tensor_bytes",
        "torch.profiler.allocation_events",
    )
    assert [d["code"] for d in noop["diagnostics"]] == ["measurement_unavailable"]
    assert noop["diagnostics"][0]["metric"] == "peak_memory"
    assert noop["diagnostics"][0]["message"] == (
        "NoMemoryEventsError: The PyTorch profiler recorded no CPU tensor allocation during the workload."
    )
    comparison = compare_benchmarks(copy, noop, check=lambda: None)
    assert comparison["output_check"] == "passed"
    assert comparison["totals"]["peak_memory"]["status"] == "unavailable"
    assert comparison["totals"]["peak_memory"]["delta"] is None
    assert comparison["totals"]["latency"]["status"] == "complete"


# ---------------------------------------------------------------------------------------------------------------
# Validation before any call; failure policy
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"metrics": "flops"}, ValueError),
        ({"metrics": b"flops"}, ValueError),
        ({"metrics": ["flops", "energy"]}, ValueError),
        ({"metrics": [1]}, ValueError),
        ({"metrics": 7}, ValueError),
        ({"rss_command": "python -c pass"}, ValueError),
        ({"rss_command": []}, ValueError),
        ({"rss_command": [sys.executable, 1]}, ValueError),
        ({"rss_command": ["/no/such/program"]}, FileNotFoundError),
        ({"rss_command": ["no-such-program-on-path-3f9a"]}, FileNotFoundError),
        ({"rss_command": ["/"]}, PermissionError),
        ({"profile": "yes"}, TypeError),
        ({"profile": 2}, TypeError),
        ({"print_summary": "yes"}, TypeError),
        ({"print_summary": None}, TypeError),
        ({"work_units": True}, ValueError),
        ({"min_repeats": 1}, ValueError),
        ({"warmup": -1}, ValueError),
        ({"work_unit": ""}, ValueError),
        ({"min_run_time": float("inf")}, ValueError),
        ({"device": "meta"}, NotImplementedError),
        ({"device": "mps:1"}, RuntimeError),
    ],
)
def test_validation_before_any_call(kwargs, error):
    workload = Counting()
    with pytest.raises(error):
        measure_workload(workload, **{"device": "cpu", **kwargs})
    assert workload.calls == 0


def test_not_callable():
    with pytest.raises(TypeError):
        measure_workload(None, device="cpu")  # type: ignore[arg-type]


@pytest.mark.parametrize("metrics", [("latency",), ("flops",), ("memory",)])
def test_workload_exceptions_propagate_as_the_same_object(metrics):
    # even NotImplementedError, the type a collector limit would turn into a diagnostic
    error = NotImplementedError("the workload itself is unfinished")

    def failing():
        raise error

    with pytest.raises(NotImplementedError) as info:
        measure_workload(failing, device="cpu", metrics=metrics, print_summary=False, **FAST)
    assert info.value is error


def test_profile_pass_exception_propagates():
    error = ValueError("fails on the second call")
    calls = []

    def workload():
        calls.append(1)
        if len(calls) == 2:
            raise error

    with pytest.raises(ValueError) as info:
        measure_workload(workload, device="cpu", metrics=("flops",), profile=True, print_summary=False)
    assert info.value is error


def test_collector_limits_become_diagnostics(monkeypatch, capsys):
    import torchscan.workload as workload_module

    def unsupported(*args, **kwargs):
        raise NotImplementedError("allocator statistics are not implemented")

    monkeypatch.setattr(workload_module, "measure_peak_memory", unsupported)
    monkeypatch.setattr(workload_module, "profile_workload", unsupported)
    monkeypatch.setattr(sys, "platform", "win32")  # RSS is unsupported there
    report = measure_workload(
        Counting(), device="cpu", metrics=("memory",), profile=True, rss_command=[sys.executable, "-c", "pass"]
    )
    out = capsys.readouterr().out
    codes = [(d["code"], d["metric"]) for d in report["diagnostics"]]
    assert codes == [
        ("measurement_unavailable", "peak_memory"),
        ("measurement_unavailable", "profile"),
        ("measurement_unavailable", "process_peak_rss"),
    ]
    assert report["context"]["profile_status"] == "unavailable"
    memory, rss = report["totals"]["peak_memory"], report["totals"]["process_peak_rss"]
    assert (memory["status"], memory["method"], memory["scope"]) == (
        "unavailable",
        "torch.profiler.allocation_events",
        "pytorch_tensor_bytes",
    )
    assert (rss["status"], rss["method"]) == ("unavailable", "unavailable")
    assert "PyTorch peak memory: unavailable (see diagnostics)" in out
    assert "Profiler: unavailable" in out
    assert "peak_memory: NotImplementedError: allocator statistics are not implemented" in out


def test_other_collector_errors_propagate(monkeypatch):
    import torchscan.workload as workload_module

    error = OSError("disk full")

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(workload_module, "measure_flops", broken)
    with pytest.raises(OSError) as info:
        measure_workload(Counting(), device="cpu", metrics=("flops",), print_summary=False)
    assert info.value is error


def test_failing_rss_command_propagates():
    with pytest.raises(subprocess.CalledProcessError):
        measure_workload(
            Counting(), device="cpu", metrics=(), rss_command=[sys.executable, "-c", "raise SystemExit(2)"], print_summary=False
        )


def test_print_summary_false_prints_nothing(capsys):
    measure_workload(Counting(), device="cpu", metrics=("flops",), print_summary=False)
    assert capsys.readouterr().out == ""


def test_fully_counted_flops_print_without_lower_bound(capsys):
    a = torch.ones(4, 4)
    report = measure_workload(lambda: a @ a, device="cpu", metrics=("flops",))
    out = capsys.readouterr().out
    assert report["totals"]["operator_flops"] == {
        "status": "complete",
        "value": 128,  # 2 * 4 * 4 * 4
        "known_value": 128,
        "unit": "FLOPs",
        "scope": "workload",
        "method": "torchscan_dispatch_counter",
    }
    assert "  Operator FLOPs: 128.000 FLOPs" in out.splitlines()
