"""torchscan.process.measure_peak_memory on CPU (contract 1.6; CPU baseline 0 is our documented deviation)."""

from __future__ import annotations

import json

import pytest
import torch

from torchscan.process import measure_peak_memory


def test_single_allocation_is_the_peak():
    memory = measure_peak_memory(lambda: torch.ones(1000), device="cpu")
    # one float32 tensor of 1000 elements: 4000 bytes
    assert memory == {
        "device": "cpu",
        "metric": "pytorch_tensor_bytes",
        "baseline_bytes": 0,
        "peak_bytes": 4000,
        "delta_bytes": 4000,
    }
    json.dumps(memory, allow_nan=False)


def test_peak_counts_only_simultaneously_alive_tensors():
    def sequential():
        a = torch.ones(1000)  # 4000 B
        del a
        b = torch.ones(2000)  # 8000 B, after a was freed
        del b

    def overlapping():
        a = torch.ones(1000)
        b = torch.ones(2000)  # both alive: 12000 B
        del a, b

    assert measure_peak_memory(sequential, device="cpu")["peak_bytes"] == 8000
    assert measure_peak_memory(overlapping, device="cpu")["peak_bytes"] == 12000


def test_preexisting_tensors_are_not_counted():
    big = torch.ones(100_000)  # 400 kB allocated before the call
    memory = measure_peak_memory(lambda: big[:10].clone(), device="cpu")
    assert memory["peak_bytes"] == 40  # the 10-element copy only
    assert memory["baseline_bytes"] == 0


def test_torch_device_object_and_string_accepted():
    for device in ("cpu", torch.device("cpu")):
        assert measure_peak_memory(lambda: torch.ones(10), device=device)["peak_bytes"] == 40


def test_workload_called_once_and_exception_propagates():
    calls = []
    measure_peak_memory(lambda: calls.append(torch.ones(4)), device="cpu")
    assert len(calls) == 1

    error = ValueError("workload failed")

    def failing():
        torch.ones(10)
        raise error

    with pytest.raises(ValueError) as info:
        measure_peak_memory(failing, device="cpu")
    assert info.value is error
    # the process-wide lock was released: the next measurement runs
    assert measure_peak_memory(lambda: torch.ones(10), device="cpu")["peak_bytes"] == 40


def test_no_allocation_raises_runtime_error():
    from torchscan.process import NoMemoryEventsError
    from torchscan.process.memory import _NoMemoryEventsError

    with pytest.raises(RuntimeError) as info:
        measure_peak_memory(lambda: None, device="cpu")
    # a public name in the traceback; the reference's private name still catches it
    assert type(info.value) is NoMemoryEventsError is _NoMemoryEventsError
    assert type(info.value).__qualname__ == "NoMemoryEventsError"
    assert str(info.value) == "The PyTorch profiler recorded no CPU tensor allocation during the workload."


@pytest.mark.parametrize(
    ("device", "error"),
    [("meta", NotImplementedError), ("xla", NotImplementedError), ("mps:1", RuntimeError)],
)
def test_unsupported_devices(device, error):
    calls = []
    with pytest.raises(error):
        measure_peak_memory(lambda: calls.append(1), device=device)
    assert calls == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error path")
def test_cuda_unavailable_raises_before_running():
    calls = []
    with pytest.raises(RuntimeError):
        measure_peak_memory(lambda: calls.append(1), device="cuda")
    assert calls == []


def _in_thread(fn):
    """Runs fn in a thread; returns its exception, or fails if it hangs (a deadlock)."""
    import threading

    outcome = []

    def target():
        try:
            fn()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - the test inspects it
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the call never returned"
    return outcome[0]


def test_a_running_caller_profiler_is_refused_and_left_intact():
    from torchscan import measure_workload, profile_workload

    calls = []
    x = torch.ones(100)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.sin(x)
        for call in (
            lambda: measure_peak_memory(lambda: calls.append(torch.ones(1000)), device="cpu"),
            lambda: profile_workload(lambda: calls.append(torch.ones(1000)), device="cpu"),
            lambda: measure_workload(lambda: calls.append(1), device="cpu", metrics=("memory",), print_summary=False),
            lambda: measure_workload(lambda: calls.append(1), device="cpu", metrics=(), profile=True, print_summary=False),
        ):
            with pytest.raises(RuntimeError, match="profiler, and one is already running"):
                call()
        assert torch.autograd._profiler_enabled()
        torch.cos(x)
    assert calls == []  # refused before any workload call
    keys = {event.key for event in prof.key_averages()}
    assert {"aten::sin", "aten::cos"} <= keys


@pytest.mark.parametrize("inner", ["measure_peak_memory", "profile_workload", "measure_workload"])
@pytest.mark.parametrize("outer", ["measure_peak_memory", "profile_workload"])
def test_a_measurement_inside_another_raises_instead_of_waiting_forever(outer, inner):
    from torchscan import measure_workload, profile_workload

    run = {
        "measure_peak_memory": lambda w: measure_peak_memory(w, device="cpu"),
        "profile_workload": lambda w: profile_workload(w, device="cpu"),
        "measure_workload": lambda w: measure_workload(w, device="cpu", metrics=("memory",), print_summary=False),
    }
    seen = []

    def workload():
        torch.ones(1000)
        try:
            run[inner](lambda: torch.ones(10))
        except RuntimeError as error:
            seen.append(str(error))

    assert _in_thread(lambda: run[outer](workload)) is None
    assert len(seen) == 1 and "cannot run inside the workload" in seen[0]
    # and the lock is free again
    assert measure_peak_memory(lambda: torch.ones(1000), device="cpu")["peak_bytes"] == 4000


def test_a_profiler_running_in_another_thread_is_refused_too():
    import threading

    started, stop = threading.Event(), threading.Event()

    def profile_in_background():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            started.set()
            stop.wait(60)

    thread = threading.Thread(target=profile_in_background, daemon=True)
    thread.start()
    try:
        assert started.wait(60)
        with pytest.raises(RuntimeError, match="already running"):
            measure_peak_memory(lambda: torch.ones(1000), device="cpu")
    finally:
        stop.set()
        thread.join(60)
    assert measure_peak_memory(lambda: torch.ones(1000), device="cpu")["peak_bytes"] == 4000


def test_freeing_a_tensor_made_in_an_earlier_measurement_does_not_hide_new_ones():
    # The profiler records the release of a tensor made during an earlier profiling session. It must not be
    # subtracted from this call's own allocations: 40 MB made in one measurement, freed in the next, which keeps
    # a 20 MB tensor alive (a running sum would report 0).
    keep = [torch.empty(10_000_000)]
    assert measure_peak_memory(lambda: keep.append(torch.empty(10_000_000)), device="cpu")["peak_bytes"] == 40_000_000

    def swap():
        keep.pop()
        return torch.empty(5_000_000)

    assert measure_peak_memory(swap, device="cpu")["peak_bytes"] == 20_000_000


def test_repeated_measurements_of_a_training_step_agree():
    # The seeds' training-step pattern (zero_grad(set_to_none=True), backward, step) measured twice: the second
    # call frees the gradients the first one made; the peak is the same both times.
    model = torch.nn.Linear(64, 16)
    inputs, targets = torch.randn(32, 64), torch.randn(32, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        opt.step()

    step()
    first = measure_peak_memory(step, device="cpu")["peak_bytes"]
    second = measure_peak_memory(step, device="cpu")["peak_bytes"]
    assert first == second > 0
