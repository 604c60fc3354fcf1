"""Per-aten-call overhead of operator counting on training steps (issue 3).

For every training-step workload of the coverage zoo (tests/python/zoo.py: forward, loss,
backward, optimizer.step(), zero_grad), with one thread:

  calls   aten calls of one step, counted once with a recording TorchDispatchMode
  plain   the step alone
  empty   the step under an empty TorchDispatchMode subclass: the floor of any Python-visible counter
  ours    measure_flops(step): TorchScan's C counter with the full formula table, report included; it tells
          the phases of the step apart (one torch._C._current_graph_task_id() call per operator)
  layers  measure_flops(step, modules=model): the same with per-layer attribution, where each backward
          operator also asks the autograd engine for its node's sequence number (the phases joined to layers)
  fcm     the step under torch.utils.flop_counter.FlopCounterMode(display=False)

and prints, per aten call, the overhead (time minus plain, divided by calls) of each and the ratios to the
floor. Each time is the best of several interleaved rounds of timed loops of CPU time. Nothing is asserted.

  python bench/op_overhead.py [--quick] [--optimizer adamw|sgd|adamw-foreach|...] [workload ...]
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

import torchscan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import zoo  # noqa: E402


class EmptyMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class RecordingMode(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def per_call_time(fn: Callable[[], object], budget: float) -> float:
    """Average CPU seconds per call over a loop that runs for about `budget` seconds.

    CPU time of this (single-threaded) process rather than wall time: the per-call differences measured
    here are microseconds, and on a shared machine wall time also counts the time other processes ran."""
    start = time.process_time()
    calls = 0
    while True:
        fn()
        calls += 1
        elapsed = time.process_time() - start
        if elapsed >= budget:
            return elapsed / calls


def bench(name: str, optimizer: str, rounds: int, budget: float) -> dict[str, float]:
    case = zoo.fresh(name)
    step = zoo.training_step(case, optimizer)
    recorder = RecordingMode()
    with recorder:
        step()
    calls = recorder.calls

    def under(factory: Callable[[], TorchDispatchMode]) -> Callable[[], object]:
        def run() -> object:
            with factory():
                return step()

        return run

    cases: dict[str, Callable[[], object]] = {
        "plain": step,
        "empty": under(EmptyMode),
        "ours": lambda: torchscan.measure_flops(step),
        "layers": lambda: torchscan.measure_flops(step, modules=case.model),
        "fcm": under(lambda: FlopCounterMode(display=False)),
    }
    # Warm-up: a timed loop per case (caches, the allocator, lazy imports, the
    # counter's operator resolutions; the first workload of a run also warms
    # the process), so that the rounds below measure the steady state.
    for fn in cases.values():
        per_call_time(fn, 2 * budget)
    samples: dict[str, list[float]] = {key: [] for key in cases}
    for _ in range(rounds):
        for key, fn in cases.items():
            gc.collect()
            samples[key].append(per_call_time(fn, budget))
    t = {key: min(values) for key, values in samples.items()}
    per_call = {key: (t[key] - t["plain"]) / calls for key in ("empty", "ours", "layers", "fcm")}
    # Paired ratio: within one round the four cases run back to back, so
    # machine drift hits them alike; the median over rounds resists bursts.
    paired = [
        (samples["ours"][r] - samples["plain"][r]) / (samples["empty"][r] - samples["plain"][r])
        for r in range(rounds)
        if samples["empty"][r] > samples["plain"][r]
    ]
    return {
        "calls": calls,
        "plain": t["plain"],
        "paired": statistics.median(paired) if paired else float("nan"),
        **{f"{k}_us": v * 1e6 for k, v in per_call.items()},
    }


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    optimizer = "adamw"
    if "--optimizer" in sys.argv:
        optimizer = sys.argv[sys.argv.index("--optimizer") + 1]
        args.remove(optimizer)
    names = args or zoo.WORKLOADS
    torch.set_num_threads(1)
    rounds, budget = (2, 0.05) if quick else (5, 0.25)
    print(
        f"\nPer-aten-call overhead of one training step (forward, loss, backward, {optimizer}.step(), zero_grad)\n"
        f"torch {torch.__version__}, torchscan {torchscan.__version__}, 1 thread, best of {rounds} interleaved "
        f"rounds of ~{budget}s loops per case; overhead = (time - plain) / aten calls;\n"
        f"'paired' = median over rounds of (ours - plain) / (empty - plain) measured back to back"
    )
    header = (
        f"{'workload':16s} {'calls':>6s} {'plain ms':>9s} {'empty us':>9s} {'ours us':>8s} {'layers us':>9s} "
        f"{'fcm us':>8s}"
    )
    print(header + f" {'ours/empty':>10s} {'paired':>7s} {'fcm/empty':>9s} {'fcm/ours':>8s}")
    ratios, paired = [], []
    for name in names:
        try:
            r = bench(name, optimizer, rounds, budget)
        except ImportError as exc:  # transformers missing
            print(f"{name:16s} skipped: {exc}")
            continue
        ratio = r["ours_us"] / r["empty_us"]
        ratios.append(ratio)
        paired.append(r["paired"])
        print(
            f"{name:16s} {r['calls']:6d} {r['plain'] * 1e3:9.2f} {r['empty_us']:9.2f} {r['ours_us']:8.2f} "
            f"{r['layers_us']:9.2f} {r['fcm_us']:8.2f} {ratio:10.2f} {r['paired']:7.2f} "
            f"{r['fcm_us'] / r['empty_us']:9.2f} {r['fcm_us'] / r['ours_us']:8.2f}"
        )
    if ratios:
        print(
            f"ours/empty per-call overhead: best-of-rounds median {statistics.median(ratios):.2f}, "
            f"max {max(ratios):.2f}; paired per-round median: median {statistics.median(paired):.2f}, "
            f"max {max(paired):.2f} (target <= 1.2 on every workload)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
