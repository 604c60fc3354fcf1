"""Overheads of TorchScan's workload measurements, measured side by side in one run.

(1) Timing harness: the per-call time measure_latency reports for a no-op workload (what the harness itself
    costs per call: calling a Python callable from the C loop) next to what torch.utils.benchmark.Timer reports
    for the same workload with blocked_autorange, plus the wall time of one whole measurement each.
(2) Peak memory: measure_peak_memory(device="cpu") time over the plain workload time, next to the same ratio for
    the reference's configuration (torch.profiler with profile_memory, record_shapes and with_stack, then
    export_memory_timeline to a temporary file).
(3) Progress line: the latency measure_latency's loop reports for the no-op workload with its progress line drawn
    on a pseudo-terminal next to the same loop silent (the line is drawn between blocks, so the ratio should be
    1 within noise), how many lines were drawn, and what one draw costs (a write of a line to that terminal).

Each figure is the best of several interleaved rounds (peak memory: per-call averages of short loops); nothing
is asserted. Targets (issue 5): harness overhead at
most Timer's; peak-memory overhead at most a fifth of the reference configuration's.
"""

from __future__ import annotations

import gc
import os
import pty
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable

# PyTorch 2.13's Kineto logs two "USDT: ... profiler_start/stop" lines on stderr for every profiling
# session (hundreds here). Level 6 silences them; Kineto reads it once, before its first session.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

import torch  # noqa: E402
from torch import nn  # noqa: E402

import torchscan  # noqa: E402
from torchscan import _engine, measure_latency  # noqa: E402
from torchscan.process import measure_peak_memory  # noqa: E402


def noop() -> None:
    return None


def timing(rounds: int, min_run_time: float) -> None:
    from torch.utils.benchmark import Timer

    ours: list[float] = []
    theirs: list[float] = []
    ours_wall: list[float] = []
    theirs_wall: list[float] = []
    threads = torch.get_num_threads()
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        report = measure_latency(noop, device="cpu", min_run_time=min_run_time)
        ours_wall.append(time.perf_counter() - start)
        ours.append(report["totals"]["latency"]["value"])
        gc.collect()
        start = time.perf_counter()
        timer = Timer(stmt="workload()", globals={"workload": noop}, num_threads=threads)
        measurement = timer.blocked_autorange(min_run_time=min_run_time)
        theirs_wall.append(time.perf_counter() - start)
        theirs.append(measurement.median)
    print(f"\n== (1) timing harness on a no-op workload (min_run_time={min_run_time}s) ==")
    print(f"  measure_latency              {min(ours) * 1e9:8.1f} ns per call (block median)")
    print(f"  torch.utils.benchmark.Timer  {min(theirs) * 1e9:8.1f} ns per call (block median)")
    print(f"  harness per call, ours / Timer = {min(ours) / min(theirs):.2f}  (target <= 1)")
    print(f"  one whole measurement: ours {min(ours_wall):.3f} s, Timer {min(theirs_wall):.3f} s")


def mlp() -> tuple[nn.Module, torch.Tensor]:
    layers: list[nn.Module] = []
    for _ in range(24):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.ReLU()]
    return nn.Sequential(*layers), torch.randn(16, 256)


def cnn() -> tuple[nn.Module, torch.Tensor]:
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )
    return model, torch.randn(8, 3, 64, 64)


def reference_peak_memory(workload: Callable[[], object], directory: str) -> None:
    """The reference's CPU configuration: stacks and shapes recorded, memory timeline exported."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
        workload()
    path = os.path.join(directory, "timeline.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        prof.export_memory_timeline(path, device="cpu")
    os.unlink(path)


def per_call_time(fn: Callable[[], object], budget: float) -> float:
    """Average seconds per call over a loop of at least 3 calls that runs for about `budget` s."""
    gc.collect()
    start = time.perf_counter()
    calls = 0
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget and calls >= 3:
            return elapsed / calls


def peak_memory(name: str, build: Callable[[], tuple[nn.Module, torch.Tensor]], rounds: int, budget: float) -> None:
    torch.manual_seed(0)
    model, inputs = build()
    model.eval()

    def plain() -> object:
        with torch.no_grad():
            return model(inputs)

    with tempfile.TemporaryDirectory() as directory:
        cases: dict[str, Callable[[], object]] = {
            "plain": plain,
            "measure_peak_memory": lambda: measure_peak_memory(plain, device="cpu"),
            "reference": lambda: reference_peak_memory(plain, directory),
        }
        for fn in cases.values():  # warm-up: lazy imports, allocator, profiler start-up
            fn()
        samples: dict[str, list[float]] = {key: [] for key in cases}
        for _ in range(rounds):
            for key, fn in cases.items():
                samples[key].append(per_call_time(fn, budget))
    t = {key: min(values) for key, values in samples.items()}
    ours, ref = t["measure_peak_memory"] / t["plain"], t["reference"] / t["plain"]
    print(f"\n== (2) peak memory, {name} ==")
    for key in cases:
        print(f"  {key:20s} {t[key] * 1e3:9.2f} ms   x{t[key] / t['plain']:.1f} of plain")
    print(f"  measure_peak_memory time / plain = {ours:.1f}")
    print(f"  reference config time / plain    = {ref:.1f}")
    print(
        f"  overhead ratio (ours - plain) / (reference - plain) = "
        f"{(t['measure_peak_memory'] - t['plain']) / (t['reference'] - t['plain']):.3f}  (target <= 0.2)"
    )


def progress(rounds: int, min_run_time: float) -> None:
    controller, terminal = pty.openpty()
    drawn = bytearray()

    def drain() -> None:  # a terminal nobody reads would block the writer once its buffer fills
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                return
            if not chunk:
                return
            drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    silent: list[float] = []
    shown: list[float] = []
    for _ in range(rounds):
        for fd, results in ((-1, silent), (terminal, shown)):
            gc.collect()
            timing = _engine.time_workload(noop, None, 5, min_run_time, 5, 1.0, "calls", progress_fd=fd)
            results.append(timing["totals"]["latency"]["value"])
    line = b"\r" + b"x" * 79
    writes = 2000
    start = time.perf_counter()
    for _ in range(writes):
        os.write(terminal, line)
    per_draw = (time.perf_counter() - start) / writes
    os.close(terminal)
    reader.join(timeout=5)
    os.close(controller)
    lines = drawn.count(b"\rtorchscan: ") - drawn.count(b" \rtorchscan: ")  # a shorter redraw writes its text twice
    print(f"\n== (3) progress line of measure_latency (no-op workload, min_run_time={min_run_time}s) ==")
    print(f"  latency, line drawn on a terminal {min(shown) * 1e9:8.1f} ns per call (block median)")
    print(f"  latency, silent                   {min(silent) * 1e9:8.1f} ns per call (block median)")
    print(f"  drawn / silent = {min(shown) / min(silent):.3f}  (draws happen between blocks: 1 within noise)")
    print(f"  {lines} lines drawn in {rounds} measurements; one draw ~{per_draw * 1e6:.1f} us (write of a line),")
    print(f"  at most 10 a second: <= {10 * per_draw * 1e6:.0f} us per second of measurement, outside timed blocks")


def main() -> int:
    torch.set_num_threads(1)
    quick = "--quick" in sys.argv
    rounds, budget = (3, 0.05) if quick else (5, 0.3)
    print(
        f"torch {torch.__version__}, torchscan {torchscan.__version__}, 1 thread, "
        f"best of {rounds} interleaved rounds (peak memory: ~{budget}s loops per case)"
    )
    timing(rounds, 0.05 if quick else 0.2)
    peak_memory("24 x [Linear(256,256) + LayerNorm + ReLU], batch 16", mlp, rounds, budget)
    peak_memory("3-conv CNN, 8 x 3 x 64 x 64", cnn, rounds, budget)
    progress(2 if quick else rounds, 1.2 if quick else 2.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
