"""The cost of torchscan.gather_reports next to a bare torch.distributed.all_gather_object of the same reports.

2 and 4 gloo ranks on this machine (loopback), started with torch.multiprocessing (spawn). Each rank crawls two
models (a 4-row MLP, and a 256-layer MLP whose 385-row report is about half a megabyte of JSON), then, in interleaved rounds
with a barrier before each call:

- ``gather_reports(report)``: the store handshake (every rank posts its report's shape, computed in C, and
  reads the others'), every report as JSON text through the same store to rank 0, and on rank 0 the
  GatheredReport built in C;
- ``all_gather_object(out, report)``: the same reports to every rank, nothing checked, nothing computed.

It prints, per world size and report, the median wall time per call on rank 0 of each (in ms), their ratio, and
the parts of gather_reports measured apart on rank 0: the shape (C) of one report, and the GatheredReport (C)
from the gathered list. Nothing is asserted (bench/, not tests/).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

ROUNDS = 15


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _models() -> dict[str, nn.Module]:
    torch.manual_seed(0)
    return {
        "small MLP": nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)),
        "256-layer MLP": nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.ReLU()) for _ in range(128)]),
    }


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=120))
    import torchscan
    from torchscan import _engine

    results = {}
    try:
        for name, model in _models().items():
            report = torchscan.crawl_module(model, args=(torch.ones(2, 32),))
            size = len(json.dumps(report))
            ours: list[float] = []
            bare: list[float] = []
            gathered = None
            for _ in range(ROUNDS):
                dist.barrier()
                start = time.perf_counter()
                gathered = torchscan.gather_reports(report, timeout=60)
                ours.append(time.perf_counter() - start)
                dist.barrier()
                listing: list = [None] * world
                start = time.perf_counter()
                dist.all_gather_object(listing, report)
                bare.append(time.perf_counter() - start)
            dist.barrier()  # the other ranks wait in the next barrier while rank 0 times the C parts alone
            if rank == 0:
                shape = []
                build = []
                ranks = list(range(world))
                for _ in range(ROUNDS):
                    start = time.perf_counter()
                    _engine.gather_shape(report)
                    shape.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    _engine.gather_reports(gathered["reports"], ranks)
                    build.append(time.perf_counter() - start)
                results[name] = {
                    "rows": len(report["layers"]),
                    "bytes": size,
                    "gather_reports": statistics.median(ours),
                    "all_gather_object": statistics.median(bare),
                    "shape": statistics.median(shape),
                    "build": statistics.median(build),
                }
            dist.barrier()
    finally:
        if rank == 0:
            Path(out).write_text(json.dumps(results), encoding="utf-8")
        dist.destroy_process_group()


def run(world: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "results.json")
        context = mp.start_processes(
            _worker, args=(world, _free_port(), out), nprocs=world, join=False, start_method="spawn"
        )
        deadline = time.monotonic() + 600
        try:
            while not context.join(timeout=1.0):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{world} ranks did not finish within 600 s")
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            for process in context.processes:
                process.join(10)
        return json.loads(Path(out).read_text(encoding="utf-8"))


def main() -> None:
    print(
        f"gather_reports vs all_gather_object of the same AnalysisReports, gloo on loopback, "
        f"median of {ROUNDS} interleaved calls on rank 0 (torch {torch.__version__}, {os.cpu_count()} CPUs)"
    )
    header = (
        f"{'ranks':>5}  {'report':<14} {'rows':>5} {'JSON':>9}  {'gather_reports':>14}  {'all_gather_object':>17}  "
        f"{'ratio':>6}  {'shape (C)':>9}  {'build (C)':>9}"
    )
    print(header)
    for world in (2, 4):
        for name, r in run(world).items():
            print(
                f"{world:>5}  {name:<14} {r['rows']:>5} {r['bytes'] / 1024:>7.0f}kB  {r['gather_reports'] * 1e3:>12.2f}ms  "
                f"{r['all_gather_object'] * 1e3:>15.2f}ms  {r['gather_reports'] / r['all_gather_object']:>6.2f}  "
                f"{r['shape'] * 1e3:>7.2f}ms  {r['build'] * 1e3:>7.2f}ms"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
