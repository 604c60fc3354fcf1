"""profile_workload (contract 1.9): one instrumented call, rows reduced in C, Chrome trace never overwriting."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
import torch

import torchscan
from torchscan import profile_workload

from conftest import json_roundtrip


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self):
        self.calls += 1
        a = torch.ones(32, 32)
        return (a @ a).sin()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"limit": 0}, ValueError),
        ({"limit": True}, ValueError),
        ({"limit": 2.0}, ValueError),
        ({"limit": None}, ValueError),
        ({"device": "meta"}, NotImplementedError),
        ({"device": "mps:1"}, RuntimeError),
        ({"trace_path": 3}, TypeError),
    ],
)
def test_validation_before_the_call(kwargs, error):
    workload = Counting()
    with pytest.raises(error):
        profile_workload(workload, **{"device": "cpu", **kwargs})
    assert workload.calls == 0


def test_not_callable():
    with pytest.raises(TypeError):
        profile_workload("workload", device="cpu")  # type: ignore[arg-type]


def test_existing_trace_is_never_overwritten(tmp_path):
    trace = tmp_path / "trace.json"
    trace.write_text("keep me")
    workload = Counting()
    with pytest.raises(FileExistsError):
        profile_workload(workload, device="cpu", trace_path=trace)
    assert workload.calls == 0
    assert trace.read_text() == "keep me"
    with pytest.raises(FileNotFoundError):
        profile_workload(workload, device="cpu", trace_path=tmp_path / "missing" / "trace.json")
    assert workload.calls == 0


def test_trace_appearing_during_the_run_is_not_overwritten(tmp_path):
    trace = tmp_path / "trace.json"

    def racing():
        torch.ones(4).sin()
        trace.write_text("written meanwhile")

    with pytest.raises(FileExistsError):
        profile_workload(racing, device="cpu", trace_path=trace)
    assert trace.read_text() == "written meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]  # no temporary file left


def test_report_rows_and_trace(tmp_path):
    trace = tmp_path / "trace.json"
    workload = Counting()
    report = profile_workload(workload, device=torch.device("cpu"), trace_path=str(trace), limit=3)
    assert workload.calls == 1
    assert set(report) == {"schema_version", "context", "operators", "diagnostics"}
    assert report["schema_version"] == 1
    context = report["context"]
    assert context == {
        "torch_version": torch.__version__,
        "device": "cpu",
        "method": "torch.profiler.profile",
        "operator_groups": context["operator_groups"],
        "limit": 3,
        "device_time_supported": False,
    }
    assert context["operator_groups"] >= 3
    rows = report["operators"]
    assert len(rows) == 3
    for row in rows:
        assert set(row) == {"operator", "calls", "input_shapes", "cpu_self_seconds", "device_self_seconds", "cpu_net_bytes"}
        assert row["device_self_seconds"] is None
        assert isinstance(row["calls"], int) and row["calls"] >= 1
    times = [row["cpu_self_seconds"] for row in rows]
    assert times == sorted(times, reverse=True)
    assert report["diagnostics"] == []
    # the trace is a Chrome trace, and no path is stored in the report
    assert "traceEvents" in json.loads(trace.read_text())
    assert str(tmp_path) not in json.dumps(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]
    assert json_roundtrip(report) == report


def test_shapes_are_grouped():
    a, b = torch.ones(8, 8), torch.ones(4, 4)
    report = profile_workload(lambda: (a @ a, b @ b), device="cpu", limit=100)
    mm = [row for row in report["operators"] if row["operator"] == "aten::mm"]
    assert sorted(row["input_shapes"] for row in mm) == [[[4, 4], [4, 4]], [[8, 8], [8, 8]]]


def test_exception_propagates_and_lock_released():
    error = ValueError("profiled workload failed")

    def failing():
        torch.ones(4).sin()
        raise error

    with pytest.raises(ValueError) as info:
        profile_workload(failing, device="cpu")
    assert info.value is error
    assert profile_workload(Counting(), device="cpu")["operators"]


# ---------------------------------------------------------------------------------------------------------------
# The C reduction against an independent Python one, on plain objects shaped like key_averages rows
# ---------------------------------------------------------------------------------------------------------------


def _event(key, count, cpu_us, device_us, net, shapes):
    return SimpleNamespace(
        key=key,
        count=count,
        input_shapes=shapes,
        self_cpu_time_total=cpu_us,
        self_device_time_total=device_us,
        self_cpu_memory_usage=net,
    )


EVENTS = [
    _event("aten::add", 2, 10.0, 40.0, 16, [[3], [3]]),
    _event("aten::mm", 1, 30.0, 20.0, 36, [[3, 4], [4, 3]]),
    _event("aten::sin", 1, 10.0, 0.0, -8, [[3]]),
    _event("[memory]", 1, 0.0, 10.0, -36, []),
    _event("aten::empty", 3, 5.5, 0.5, 0, [[], [], []]),
]


def _python_reference(events, device, limit):
    key = (lambda e: e.self_device_time_total) if device else (lambda e: e.self_cpu_time_total)
    return [
        {
            "operator": e.key,
            "calls": e.count,
            "input_shapes": e.input_shapes,
            "cpu_self_seconds": e.self_cpu_time_total / 1e6,
            "device_self_seconds": e.self_device_time_total / 1e6 if device else None,
            "cpu_net_bytes": e.self_cpu_memory_usage,
        }
        for e in sorted(events, key=key, reverse=True)[:limit]
    ]


@pytest.mark.parametrize("device", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 20])
def test_c_reduction_matches_a_python_reduction(device, limit):
    assert torchscan._engine.profile_rows(EVENTS, device, limit) == _python_reference(EVENTS, device, limit)


def test_c_reduction_falls_back_to_cuda_time_attribute():
    legacy = SimpleNamespace(
        key="aten::mm", count=1, input_shapes=[], self_cpu_time_total=1.0, self_cuda_time_total=7.0, self_cpu_memory_usage=0
    )
    assert torchscan._engine.profile_rows([legacy], True, 5)[0]["device_self_seconds"] == 7e-6


# ---------------------------------------------------------------------------------------------------------------
# MPS and CUDA diagnostics (monkeypatched; the profiler itself records CPU activity here)
# ---------------------------------------------------------------------------------------------------------------


def test_mps_rows_are_cpu_dispatch_only(monkeypatch):
    syncs = []
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: syncs.append(1))
    report = profile_workload(Counting(), device="mps")
    assert report["context"]["device"] == "mps"
    assert report["context"]["device_time_supported"] is False
    assert [d["code"] for d in report["diagnostics"]] == ["mps_gpu_trace_unavailable"]
    assert report["diagnostics"][0]["metric"] == "device_time"
    assert len(syncs) == 2  # before the profiled call, and after it inside the profiler


def test_cuda_without_the_cuda_activity(monkeypatch):
    from torch.profiler import ProfilerActivity

    syncs = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: syncs.append(device))
    monkeypatch.setattr(torch.profiler, "supported_activities", lambda: {ProfilerActivity.CPU})
    report = profile_workload(Counting(), device="cuda")
    assert report["context"]["device"] == "cuda:0"
    assert report["context"]["device_time_supported"] is False
    assert [d["code"] for d in report["diagnostics"]] == ["cuda_gpu_trace_unavailable"]
    assert syncs == [torch.device("cuda", 0)] * 2
    assert all(row["device_self_seconds"] is None for row in report["operators"])


# ---------------------------------------------------------------------------------------------------------------
# The profiler's own log lines stay out of the terminal; the workload's stderr does not
# ---------------------------------------------------------------------------------------------------------------

QUIET = """
import os, torch
from torchscan import profile_workload
from torchscan.process import measure_peak_memory

def workload():
    os.write(2, b"workload line\\n")
    return torch.ones(10)

measure_peak_memory(workload, device="cpu")
profile_workload(workload, device="cpu")
os.write(2, b"after\\n")
"""


def _stderr_of(script, **env_changes):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120, check=True)
    return done.stderr.decode()


def test_profiler_start_and_stop_print_nothing_but_the_workload_does():
    assert _stderr_of(QUIET) == "workload line\nworkload line\nafter\n"


RAW = """
import os, torch
from torch.profiler import ProfilerActivity, profile

def workload():
    os.write(2, b"workload line\\n")
    return torch.ones(10)

with profile(activities=[ProfilerActivity.CPU], profile_memory=True):
    workload()
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True):
    workload()
os.write(2, b"after\\n")
"""


def test_a_kineto_log_level_set_by_the_user_is_respected():
    # With the user's level, the profiler prints what it prints without TorchScan (what that is depends on the
    # PyTorch release: 2.13 prints USDT, INFO and STAGE lines at level 0): the same number of lines.
    ours = _stderr_of(QUIET, KINETO_LOG_LEVEL="0").splitlines()
    raw = _stderr_of(RAW, KINETO_LOG_LEVEL="0").splitlines()
    assert ours.count("workload line") == raw.count("workload line") == 2 and ours[-1] == raw[-1] == "after"
    assert len(ours) == len(raw)
    if torch.__version__.startswith("2.13"):
        assert any("profiler_start" in line for line in ours)
