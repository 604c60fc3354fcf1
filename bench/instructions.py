"""Instructions per call, counted by valgrind's callgrind: the main overhead ratios of
bench/run.py in a unit that other processes on a shared machine cannot disturb.

Timing on a small shared VM moves by several percent between identical cases, which is the size
of the gaps the targets are about. Instruction counts repeat to a fraction of a percent; they do not see
cache misses (a crawl runs after a forward that swept megabytes of activations, so its time
ratio is somewhat above its instruction ratio), so read them next to the timings, not instead.

One valgrind run executes every case: a warm-up, then `N` calls between two calls of
os.getppid(), on whose entry callgrind dumps its counters (--dump-before=getppid). Each case's
figure is its dump divided by N. Cases, with one thread, on the workloads of bench/run.py:
  plain      the no-grad forward            empty      the same under an empty TorchDispatchMode
  structure  crawl_module(mode="structure") full       crawl_module (full mode)
  flops      measure_flops(forward)
and, on one layer of the (b) encoder, the fused aten._transformer_encoder_layer_fwd call alone
(plain, under the empty mode, under measure_flops), as the difference between 40 and 20 layer
calls per entry of the mode, so that entering it and measure_flops' report cancel out.

  python bench/instructions.py [N]       (N defaults to 10; needs valgrind: apt-get install valgrind)

Prints instructions per call and the ratios; nothing is asserted.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FUSED_CALLS = 20  # layer calls per entry of the mode in the fused cases (and twice as many)


def child(n: int) -> None:
    import torch

    import torchscan

    sys.path.insert(0, str(HERE))
    import run as workloads  # the models and the empty mode of bench/run.py

    EmptyMode = workloads.EmptyMode
    torch.set_num_threads(1)
    cases = []
    for key, build in (("a", workloads.mlp_blocks), ("b", workloads.encoder), ("c", workloads.resnet)):
        torch.manual_seed(0)
        model, inputs = build()
        model.eval()

        def plain(model=model, inputs=inputs):
            with torch.no_grad():
                return model(*inputs)

        def empty(model=model, inputs=inputs):
            with torch.no_grad(), EmptyMode():
                return model(*inputs)

        cases += [
            (f"{key} plain", plain),
            (f"{key} empty", empty),
            (f"{key} structure", lambda m=model, i=inputs: torchscan.crawl_module(m, args=i, mode="structure")),
            (f"{key} full", lambda m=model, i=inputs: torchscan.crawl_module(m, args=i)),
            (f"{key} flops", lambda p=plain: torchscan.measure_flops(p)),
        ]
        if key == "b":
            layer, x = model.layers[0], inputs[0]

            def layer_calls(k, mode=None, layer=layer, x=x):
                def run():
                    with torch.no_grad(), (mode() if mode else contextlib.nullcontext()):
                        for _ in range(k):
                            layer(x)

                return run

            layer_cases = []
            for k in (FUSED_CALLS, 2 * FUSED_CALLS):
                layer_cases += [
                    (f"fused plain x{k}", layer_calls(k)),
                    (f"fused empty x{k}", layer_calls(k, EmptyMode)),
                    (f"fused flops x{k}", lambda run=layer_calls(k): torchscan.measure_flops(run)),
                ]
    for name, fn in cases + layer_cases:
        for _ in range(3):
            fn()
        print("case:", name, flush=True)
        gc.collect()  # as bench/run.py does before each batch
        os.getppid()  # dump: everything so far (warm-up)
        for _ in range(n):
            fn()
        os.getppid()  # dump: the N calls


def counts(directory: Path, base: str) -> list[int]:
    """Instruction totals of the dumps, in dump order."""
    files = sorted(
        (p for p in directory.iterdir() if p.name.startswith(base + ".")),
        key=lambda p: int(p.name.rsplit(".", 1)[1]),
    )
    result = []
    for path in files:
        text = path.read_text(errors="replace")
        match = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.MULTILINE)
        result.append(int(match.group(1)) if match else 0)
    return result


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
        return 0
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    if shutil.which("valgrind") is None:
        print("bench/instructions.py needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg"
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--dump-before=getppid",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--child",
                str(n),
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts run after run
        )
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
            return proc.returncode
        names = [line[6:] for line in proc.stdout.splitlines() if line.startswith("case: ")]
        dumps = counts(Path(tmp), out.name)
    if len(dumps) != 2 * len(names):
        # getppid not matched, or called by something else: the dumps would not line up with the cases
        print(f"expected {2 * len(names)} callgrind dumps (two per case), got {len(dumps)}", file=sys.stderr)
        return 1
    # dumps: [warm-up 0, case 0, warm-up 1, case 1, ...] (+ the rest at exit)
    per_call = {name: dumps[2 * i + 1] / n for i, name in enumerate(names)}
    # a fused case's figure per layer call: 2F calls minus F calls per entry of the mode,
    # so that entering the mode and measure_flops' report cancel out
    for case in ("plain", "empty", "flops"):
        twice = per_call.pop(f"fused {case} x{2 * FUSED_CALLS}")
        once = per_call.pop(f"fused {case} x{FUSED_CALLS}")
        per_call[f"fused {case}"] = (twice - once) / FUSED_CALLS
    print(f"instructions per call (callgrind, {n} calls per case, one thread)")
    for name, value in per_call.items():
        print(f"  {name:16s} {value / 1e3:12.1f} K")
    for key in "abc":
        plain = per_call[f"{key} plain"]
        floor = per_call[f"{key} empty"] - plain
        print(f"({key}) structure / plain = {per_call[f'{key} structure'] / plain:.3f}")
        print(f"    full / plain = {per_call[f'{key} full'] / plain:.3f}")
        print(f"    measure_flops overhead / empty mode's = {(per_call[f'{key} flops'] - plain) / floor:.2f}")
        print(f"    full crawl overhead / empty mode's = {(per_call[f'{key} full'] - plain) / floor:.2f}")
    plain = per_call["fused plain"]
    print(
        "one fused encoder-layer call: "
        f"empty mode +{(per_call['fused empty'] - plain) / 1e3:.1f} K, "
        f"measure_flops +{(per_call['fused flops'] - plain) / 1e3:.1f} K over {plain / 1e3:.1f} K"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
