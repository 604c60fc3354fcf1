"""measure_latency (contract 1.8), compare_benchmarks (1.11) and the seed's example E8."""

from __future__ import annotations

import copy
import gc
import json
import math
import statistics

import pytest
import torch

import torchscan
from torchscan import compare_benchmarks, measure_latency

from conftest import json_roundtrip

FAST = {"min_run_time": 0.01, "warmup": 1}


class Counting:
    """A workload that counts its calls (validation must happen before any)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


@pytest.fixture
def threads():
    """Restores the thread count a test (E8) sets."""
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


# ---------------------------------------------------------------------------------------------------------------
# measure_latency: validation before any call
# ---------------------------------------------------------------------------------------------------------------

BAD_SETTINGS = [
    ({"work_units": True}, ValueError),
    ({"work_units": 10**1000}, ValueError),
    ({"work_units": math.inf}, ValueError),
    ({"work_units": math.nan}, ValueError),
    ({"work_units": 0}, ValueError),
    ({"work_units": -2.5}, ValueError),
    ({"work_units": "32"}, ValueError),
    ({"min_run_time": False}, ValueError),
    ({"min_run_time": 10**1000}, ValueError),
    ({"min_run_time": -math.inf}, ValueError),
    ({"min_run_time": 0.0}, ValueError),
    ({"min_run_time": None}, ValueError),
    ({"warmup": -1}, ValueError),
    ({"warmup": 1.0}, ValueError),
    ({"warmup": True}, ValueError),
    ({"min_repeats": 1}, ValueError),
    ({"min_repeats": 5.0}, ValueError),
    ({"min_repeats": True}, ValueError),
    ({"min_repeats": 2**63}, ValueError),
    ({"warmup": 2**63}, ValueError),
    ({"work_unit": ""}, ValueError),
    ({"work_unit": "   "}, ValueError),
    ({"work_unit": None}, ValueError),
    ({"work_unit": b"samples"}, ValueError),
    ({"device": "meta"}, NotImplementedError),
    ({"device": "xla"}, NotImplementedError),
    ({"device": "mps:1"}, RuntimeError),
    ({"device": 3}, TypeError),
]


@pytest.mark.parametrize(("settings", "error"), BAD_SETTINGS)
def test_validation_before_any_call(settings, error):
    workload = Counting()
    kwargs = {"device": "cpu", **settings}
    with pytest.raises(error):
        measure_latency(workload, **kwargs)
    assert workload.calls == 0


def test_not_callable_is_a_type_error():
    with pytest.raises(TypeError):
        measure_latency(42, device="cpu")  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error path")
def test_cuda_unavailable_raises_before_running():
    workload = Counting()
    with pytest.raises(RuntimeError):
        measure_latency(workload, device="cuda")
    assert workload.calls == 0


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="checks the no-MPS error path")
def test_mps_unavailable_raises_before_running():
    workload = Counting()
    with pytest.raises(RuntimeError):
        measure_latency(workload, device="mps")
    assert workload.calls == 0


# ---------------------------------------------------------------------------------------------------------------
# measure_latency: the report
# ---------------------------------------------------------------------------------------------------------------


def test_report_shape_and_arithmetic():
    inputs = torch.full((2, 3), 12345.25)
    workload = Counting()
    report = measure_latency(
        workload, device="cpu", inputs=inputs, work_units=8, work_unit="samples", warmup=2, min_run_time=0.02
    )
    assert set(report) == {"schema_version", "context", "inputs", "totals", "measurement"}
    assert report["schema_version"] == 1
    assert report["inputs"] == {
        "kind": "tensor",
        "shape": [2, 3],
        "dtype": "torch.float32",
        "device": "cpu",
        "requires_grad": False,
    }
    context = report["context"]
    for key in (
        "torchscan_version",
        "torch_version",
        "python_version",
        "platform",
        "machine",
        "processor",
        "device",
        "device_name",
        "num_threads",
        "num_interop_threads",
        "cuda_version",
        "inputs_source",
        "work_units",
        "work_unit",
        "warmup",
        "min_run_time",
        "min_repeats",
    ):
        assert key in context, key
    assert context["device"] == "cpu"
    assert context["device_name"] == context["processor"]
    assert context["num_threads"] == torch.get_num_threads()
    assert context["inputs_source"] == "caller_supplied"
    assert (context["work_units"], context["work_unit"], context["warmup"]) == (8, "samples", 2)
    assert (context["min_run_time"], context["min_repeats"]) == (0.02, 5)
    assert context["torchscan_version"] == torchscan.__version__

    totals = report["totals"]
    assert set(totals) == {"first_call_latency", "latency", "latency_iqr", "throughput"}
    expected = {
        "first_call_latency": ("seconds", "first_call", "synchronized_monotonic_clock"),
        "latency": ("seconds", "warmed_block_average", "torchscan_blocked_timer"),
        "latency_iqr": ("seconds", "warmed_block_average", "torchscan_blocked_timer"),
        "throughput": ("samples/s", "warmed_blocks", "torchscan_blocked_timer"),
    }
    for name, (unit, scope, method) in expected.items():
        metric = totals[name]
        assert metric["status"] == "complete"
        assert metric["value"] == metric["known_value"]
        assert (metric["unit"], metric["scope"], metric["method"]) == (unit, scope, method)

    m = report["measurement"]
    number, raw = m["number_per_run"], m["raw_times_seconds"]
    assert isinstance(number, int) and number >= 1
    assert len(raw) >= 5 and sum(raw) >= 0.02
    assert m["measured_calls"] == number * len(raw)
    # Independent arithmetic (Python's statistics / torch.quantile, as torch.utils.benchmark's Measurement).
    per_call = sorted(t / number for t in raw)
    assert totals["latency"]["value"] == pytest.approx(statistics.median(per_call), rel=1e-12)
    quartiles = torch.tensor(per_call, dtype=torch.float64).quantile(torch.tensor([0.25, 0.75], dtype=torch.float64))
    assert totals["latency_iqr"]["value"] == pytest.approx(float(quartiles[1] - quartiles[0]), rel=1e-9, abs=1e-15)
    assert totals["throughput"]["value"] == pytest.approx(8 / (sum(raw) / m["measured_calls"]), rel=1e-12)
    # first call + warmup + calibration + measured blocks (the last calibration block is the first measured one)
    assert workload.calls >= 1 + 2 + m["measured_calls"]

    text = json.dumps(report, allow_nan=False)
    assert "12345.25" not in text
    assert json_roundtrip(report) == report


def test_inputs_never_forwarded_and_optional():
    seen = []
    report = measure_latency(lambda: seen.append(1), device=torch.device("cpu"), **FAST)
    assert report["inputs"] == {"kind": "none"}
    assert report["context"]["inputs_source"] == "not_provided"
    assert report["context"]["work_unit"] == "calls"
    assert report["totals"]["throughput"]["unit"] == "calls/s"


def test_work_units_float_and_block_rule():
    report = measure_latency(lambda: None, device="cpu", work_units=2.5, min_repeats=3, **FAST)
    assert report["context"]["work_units"] == 2.5
    m = report["measurement"]
    # a no-op needs many calls per block to reach min_run_time / 10
    assert m["number_per_run"] > 100
    assert len(m["raw_times_seconds"]) >= 3


def test_first_call_exception_propagates_as_the_same_object():
    error = ValueError("first call failed")

    def failing():
        raise error

    with pytest.raises(ValueError) as info:
        measure_latency(failing, device="cpu", **FAST)
    assert info.value is error
    assert gc.isenabled()


@pytest.mark.parametrize("at_call", [3, 50])
def test_later_exception_propagates_as_the_same_object(at_call):
    error = KeyError("later")
    calls = []

    def workload():
        calls.append(1)
        if len(calls) == at_call:
            raise error

    with pytest.raises(KeyError) as info:
        measure_latency(workload, device="cpu", **FAST)
    assert info.value is error
    assert len(calls) == at_call
    assert gc.isenabled()  # the collector is resumed on errors too


def test_keyboard_interrupt_from_the_workload_propagates():
    interrupt = KeyboardInterrupt()
    calls = []

    def workload():
        calls.append(1)
        if len(calls) == 20:
            raise interrupt

    with pytest.raises(KeyboardInterrupt) as info:
        measure_latency(workload, device="cpu", **FAST)
    assert info.value is interrupt
    assert gc.isenabled()


def test_thread_settings_untouched(monkeypatch):
    threads = torch.get_num_threads()

    def forbidden(*args):
        raise AssertionError("measure_latency must not change thread settings")

    monkeypatch.setattr(torch, "set_num_threads", forbidden)
    monkeypatch.setattr(torch, "set_num_interop_threads", forbidden)
    report = measure_latency(lambda: torch.ones(4).sum(), device="cpu", **FAST)
    assert torch.get_num_threads() == threads
    assert report["context"]["num_threads"] == threads


def test_garbage_collector_paused_only_in_blocks():
    states = []
    measure_latency(lambda: states.append(gc.isenabled()), device="cpu", warmup=2, min_run_time=0.01)
    assert states[:3] == [True, True, True]  # first call and warm-up run as the caller left them
    assert not any(states[3:])  # every block runs with the cyclic collector paused
    assert gc.isenabled()


# ---------------------------------------------------------------------------------------------------------------
# CUDA and MPS paths (no GPU here: the synchronizer and device checks, monkeypatched)
# ---------------------------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.args: list[tuple] = []

    def __call__(self, *args):
        self.args.append(args)


@pytest.fixture
def fake_cuda(monkeypatch):
    sync = Recorder()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "synchronize", sync)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: f"Fake GPU {index}")
    return sync


def test_cuda_synchronizes_before_every_clock_reading(fake_cuda):
    calls = []
    report = measure_latency(lambda: calls.append(len(fake_cuda.args)), device="cuda", warmup=0, min_run_time=0.01)
    context = report["context"]
    assert context["device"] == "cuda:1"  # index defaults to current_device
    assert context["device_name"] == "Fake GPU 1"
    assert fake_cuda.args and all(args == (torch.device("cuda", 1),) for args in fake_cuda.args)
    # two readings per timed interval: the first call and every (calibration or measured) block
    raw = report["measurement"]["raw_times_seconds"]
    assert len(fake_cuda.args) % 2 == 0
    assert len(fake_cuda.args) >= 2 + 2 * len(raw)
    # the first call ran between the first two synchronizations
    assert calls[0] == 1


@pytest.mark.parametrize("device", ["cuda:2", "cuda:-1"])
def test_cuda_bad_index_raises_before_running(fake_cuda, device):
    workload = Counting()
    with pytest.raises((RuntimeError, ValueError)):
        measure_latency(workload, device=device)
    assert workload.calls == 0
    assert fake_cuda.args == []


def test_synchronizer_exception_propagates(monkeypatch, fake_cuda):
    error = RuntimeError("device lost")

    def failing_sync(*args):
        raise error

    monkeypatch.setattr(torch.cuda, "synchronize", failing_sync)
    workload = Counting()
    with pytest.raises(RuntimeError) as info:
        measure_latency(workload, device="cuda:0", **FAST)
    assert info.value is error
    assert workload.calls == 0  # the first reading comes before the first call


def test_mps_synchronizes(monkeypatch):
    sync = Recorder()
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", sync)
    report = measure_latency(lambda: None, device="mps", **FAST)
    assert report["context"]["device"] == "mps"
    assert len(sync.args) >= 2 + 2 * len(report["measurement"]["raw_times_seconds"])
    assert all(args == () for args in sync.args)
    workload = Counting()
    with pytest.raises(RuntimeError):
        measure_latency(workload, device="mps:1")
    assert workload.calls == 0


# ---------------------------------------------------------------------------------------------------------------
# compare_benchmarks
# ---------------------------------------------------------------------------------------------------------------


def _metric(value, unit="seconds", scope="warmed_block_average", method="torchscan_blocked_timer", status="complete"):
    return {
        "status": status,
        "value": value if status == "complete" else None,
        "known_value": None if status == "unavailable" else value,
        "unit": unit,
        "scope": scope,
        "method": method,
    }


def synthetic(latency: float, iqr: float, **context) -> dict:
    """A valid BenchmarkReport with chosen figures (the comparison arithmetic is checked against hand values)."""
    report = {
        "schema_version": 1,
        "context": {
            "torchscan_version": "0.3.0",
            "torch_version": "2.13.0",
            "python_version": "3.11.7",
            "platform": "Linux",
            "machine": "x86_64",
            "processor": "cpu0",
            "device": "cpu",
            "device_name": "cpu0",
            "num_threads": 4,
            "num_interop_threads": 4,
            "cuda_version": None,
            "inputs_source": "caller_supplied",
            "work_units": 32,
            "work_unit": "samples",
            "warmup": 5,
            "min_run_time": 0.2,
            "min_repeats": 5,
        },
        "inputs": {"kind": "tensor", "shape": [32, 128], "dtype": "torch.float32", "device": "cpu", "requires_grad": False},
        "totals": {
            "first_call_latency": _metric(0.5, scope="first_call", method="synchronized_monotonic_clock"),
            "latency": _metric(latency),
            "latency_iqr": _metric(iqr),
            "throughput": _metric(32 / latency, unit="samples/s", scope="warmed_blocks"),
        },
        "measurement": {"number_per_run": 4, "raw_times_seconds": [0.1] * 5, "measured_calls": 20},
    }
    report["context"].update(context)
    return report


def test_check_not_callable_raised_first():
    with pytest.raises(TypeError):
        compare_benchmarks({"not": "a report"}, None, check="yes")  # type: ignore[arg-type]


def test_faster_with_passed_check_and_context_changes():
    before, after = synthetic(0.010, 0.001), synthetic(0.004, 0.0005, num_threads=1, warmup=2)
    snapshot = copy.deepcopy((before, after))
    calls = []
    comparison = compare_benchmarks(before, after, check=lambda: calls.append(1))
    assert calls == [1]
    assert (before, after) == snapshot  # inputs untouched
    assert comparison["schema_version"] == 1
    assert comparison["report_type"] == "benchmark_comparison"
    assert comparison["output_check"] == "passed"
    assert comparison["latency_change"] == "faster"
    assert comparison["before"] == before and comparison["before"] is not before
    latency = comparison["totals"]["latency"]
    assert latency["status"] == "complete"
    assert latency["delta"] == pytest.approx(-0.006)
    assert comparison["totals"]["throughput"]["delta"] == pytest.approx(32 / 0.004 - 32 / 0.010)
    assert comparison["context_changes"] == {
        "num_threads": {"before": 4, "after": 1},
        "warmup": {"before": 5, "after": 2},
    }
    assert list(comparison["context_changes"]) == sorted(comparison["context_changes"])
    assert json_roundtrip(comparison) == comparison


@pytest.mark.parametrize(
    ("after_latency", "after_iqr", "expected"),
    [(0.0105, 0.0002, "within_variability"), (0.0095, 0.002, "within_variability"), (0.02, 0.0001, "slower")],
)
def test_latency_change(after_latency, after_iqr, expected):
    comparison = compare_benchmarks(synthetic(0.010, 0.001), synthetic(after_latency, after_iqr), check=lambda: True)
    assert comparison["latency_change"] == expected


@pytest.mark.parametrize("outcome", ["false", "assertion"])
def test_failed_check_withholds_every_delta(outcome):
    def check():
        if outcome == "false":
            return False
        raise AssertionError("outputs differ")

    before, after = synthetic(0.010, 0.001), synthetic(0.004, 0.0005)
    comparison = compare_benchmarks(before, after, check=check)
    assert comparison["output_check"] == "failed"
    assert comparison["latency_change"] == "unavailable"
    for name, diff in comparison["totals"].items():
        assert diff["status"] == "unavailable", name
        assert diff["delta"] is None, name
        assert diff["before"] == before["totals"][name]  # measurements are kept
    assert comparison["before"] == before and comparison["after"] == after


def test_other_check_exceptions_propagate_as_the_same_object():
    error = RuntimeError("check crashed")

    def check():
        raise error

    with pytest.raises(RuntimeError) as info:
        compare_benchmarks(synthetic(0.01, 0.001), synthetic(0.01, 0.001), check=check)
    assert info.value is error


@pytest.mark.parametrize("result", ["truthy", 1, 0, [], torch.tensor(True)])
def test_check_must_return_none_true_or_false(result):
    with pytest.raises(ValueError, match="check"):
        compare_benchmarks(synthetic(0.01, 0.001), synthetic(0.01, 0.001), check=lambda: result)


def _mutated(path: tuple, value) -> dict:
    report = synthetic(0.01, 0.001)
    node = report
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return report


INVALID = [
    (("context", "device_name"), "other", "contexts"),
    (("context", "torch_version"), "2.1.0", "contexts"),
    (("context", "work_units"), 16, "contexts"),
    (("inputs", "shape"), [16, 128], "input metadata"),
    (("totals", "latency_iqr", "unit"), "milliseconds", "timing unit"),
    (("totals", "throughput", "unit"), "calls/s", "timing unit"),
    (("totals", "first_call_latency", "unit"), "ms", "timing unit"),
    (("totals", "latency", "known_value"), 0.5, "MetricResult"),
    (("totals", "latency", "status"), "exact", "MetricResult"),
    (("schema_version",), 2, "schema_version"),
    (("schema_version",), True, "schema_version"),
    (("measurement",), [], "measurement"),
    (("context", "extra"), math.nan, "non-finite"),
    (("context", "extra"), "\ud800", "invalid text"),
    (("context", "extra"), object(), "non-JSON"),
    (("context", "extra"), {1: "non-str key"}, "non-string key"),
    (("context", "extra"), 2**70, "64-bit"),
]


@pytest.mark.parametrize(("path", "value", "match"), INVALID)
def test_invalid_reports_raise_before_the_check(path, value, match):
    calls = []
    for before, after in ((synthetic(0.01, 0.001), _mutated(path, value)), (_mutated(path, value), synthetic(0.01, 0.001))):
        with pytest.raises(ValueError, match=match):
            compare_benchmarks(before, after, check=lambda: calls.append(1))
    assert calls == []


def test_timing_values_must_be_positive():
    bad = synthetic(0.01, 0.001)
    bad["totals"]["latency"] = _metric(0.0)
    with pytest.raises(ValueError, match="timing value"):
        compare_benchmarks(synthetic(0.01, 0.001), bad, check=lambda: None)
    zero_iqr = synthetic(0.01, 0.0)  # an IQR of zero is valid
    assert compare_benchmarks(synthetic(0.01, 0.001), zero_iqr, check=lambda: None)["output_check"] == "passed"


def test_inputs_must_be_caller_supplied():
    before = synthetic(0.01, 0.001, inputs_source="not_provided")
    after = synthetic(0.01, 0.001, inputs_source="not_provided")
    with pytest.raises(ValueError, match="input metadata"):
        compare_benchmarks(before, after, check=lambda: None)


def test_partial_latency_gives_no_delta():
    after = synthetic(0.01, 0.001)
    after["totals"]["latency"] = _metric(0.008, status="partial")
    comparison = compare_benchmarks(synthetic(0.01, 0.001), after, check=lambda: None)
    assert comparison["totals"]["latency"]["status"] == "partial"
    assert comparison["totals"]["latency"]["delta"] is None
    assert comparison["latency_change"] == "unavailable"


def test_incompatible_method_raises():
    after = synthetic(0.01, 0.001)
    after["totals"]["latency"]["method"] = "torch.utils.benchmark.Timer"
    with pytest.raises(ValueError, match="incompatible method"):
        compare_benchmarks(synthetic(0.01, 0.001), after, check=lambda: None)


# ---------------------------------------------------------------------------------------------------------------
# E8: checking an optimization, as the quickstart types it (render_report is out of this package's scope)
# ---------------------------------------------------------------------------------------------------------------


def test_e8_checking_an_optimization(tmp_path, threads):
    from torchscan import compare_benchmarks, measure_latency, profile_workload

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

    assert comparison["after"]["profile"]["operators"]
    assert comparison["totals"]["latency"]["status"] == "complete"
    assert comparison["latency_change"] in ("faster", "slower", "within_variability")
    assert comparison["context_changes"] == {}
    assert json.loads((tmp_path / "comparison.json").read_text()) == json_roundtrip(comparison)
    # the batched call runs 32 rows per matmul instead of 32 matmuls: the report says so, without timed assertions
    mm_rows = [row for row in comparison["after"]["profile"]["operators"] if row["operator"] == "aten::addmm"]
    assert mm_rows and mm_rows[0]["calls"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Repeated calls of the C functions do not leak
# ---------------------------------------------------------------------------------------------------------------


def test_repeated_calls_do_not_leak():
    before, after = synthetic(0.010, 0.001), synthetic(0.004, 0.0005, num_threads=1)

    def failing():
        raise ValueError("x")  # a fresh object: re-raising one object grows its traceback

    def round_trip():
        compare_benchmarks(before, after, check=lambda: None)
        compare_benchmarks(before, after, check=lambda: False)
        try:
            measure_latency(failing, device="cpu")
        except ValueError:
            pass
        torchscan._engine.time_workload(lambda: None, None, 0, 1e-5, 2, 1.0, "calls")
        torchscan._engine.workload_summary(before)

    for _ in range(20):
        round_trip()
    gc.collect()
    objects = len(gc.get_objects())
    for _ in range(200):
        round_trip()
    gc.collect()
    assert len(gc.get_objects()) - objects < 100


def test_non_timing_totals_must_not_be_negative():
    # a negative byte count is invalid, and its delta could leave the 64-bit range
    bad = synthetic(0.01, 0.001)
    bad["totals"]["peak_memory"] = _metric(-(2**63), unit="bytes", scope="pytorch_tensor_bytes", method="m")
    good = synthetic(0.01, 0.001)
    good["totals"]["peak_memory"] = _metric(2**63 - 1, unit="bytes", scope="pytorch_tensor_bytes", method="m")
    for before, after in ((good, bad), (bad, good)):
        with pytest.raises(ValueError, match="totals.peak_memory .* negative"):
            compare_benchmarks(before, after, check=lambda: None)


def test_a_timing_inside_a_timed_workload_raises_instead_of_waiting_forever():
    import threading

    seen = []

    def outer():
        try:
            measure_latency(lambda: None, device="cpu", min_run_time=0.001)
        except RuntimeError as error:
            seen.append(str(error))

    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (measure_latency(outer, device="cpu", warmup=0, min_run_time=0.001, min_repeats=2), done.set()),
        daemon=True,
    )
    thread.start()
    thread.join(timeout=60)
    assert done.is_set(), "the nested timing waited for itself"
    assert seen and all("cannot run inside the workload of measure_latency" in s for s in seen)
    with pytest.raises(RuntimeError, match="cannot run inside"):
        # measure_workload checks before its first call: the outer timing has not run the workload yet
        measure_latency(
            lambda: torchscan.measure_workload(lambda: None, device="cpu", print_summary=False),
            device="cpu",
            warmup=0,
            min_run_time=0.001,
        )


def test_an_interrupt_during_a_long_warmup_is_not_held_back():
    import itertools
    import signal

    calls = itertools.count()  # a C callable: no bytecode runs that would check for signals

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    warmup = 10**9
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            measure_latency(calls.__next__, device="cpu", warmup=warmup, min_run_time=0.001)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert next(calls) < warmup  # stopped during the warmup, not after it
