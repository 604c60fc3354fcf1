"""Reports under torch.distributed: 2 and 4 gloo ranks on this machine (loopback only).

Each test starts its ranks with torch.multiprocessing (spawn) and runs named scenarios in every rank; a rank
writes what it measured (or the exception a scenario raised) to a JSON file, and the test checks those files
here. Every start is bounded by a timeout and its processes are killed and reaped whatever happens, so no test
hangs and none leaves a process behind. Few starts, many scenarios per start: starting a rank (importing torch)
is what costs.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import torchscan

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch has no torch.distributed")

START_TIMEOUT = 120.0  # seconds for one start of every rank, scenarios included (2 shared cores)


# ---------------------------------------------------------------------------------------------------------------
# Starting ranks


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, port: int, scenarios: list[str], out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    os.environ.pop("LOCAL_RANK", None)
    os.environ.pop("LOCAL_WORLD_SIZE", None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    results: dict[str, Any] = {}
    try:
        for name in scenarios:
            try:
                results[name] = SCENARIOS[name](rank, world)
            except Exception as error:  # noqa: BLE001 - recorded for the test to check
                results[name] = {"raised": type(error).__name__, "message": str(error)}
    finally:
        Path(out, f"{rank}.json").write_text(json.dumps(results), encoding="utf-8")
        dist.destroy_process_group()


def run_ranks(world: int, scenarios: list[str], tmp_path: Path, timeout: float = START_TIMEOUT) -> list[dict[str, Any]]:
    """Runs ``scenarios`` in ``world`` gloo ranks; returns each rank's results, in rank order."""
    context = mp.start_processes(
        _worker, args=(world, _free_port(), scenarios, str(tmp_path)), nprocs=world, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=1.0):
            if time.monotonic() > deadline:
                pytest.fail(f"{world} ranks running {scenarios} did not finish within {timeout} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
        for process in context.processes:
            process.join(10)
    return [json.loads((tmp_path / f"{rank}.json").read_text(encoding="utf-8")) for rank in range(world)]


# ---------------------------------------------------------------------------------------------------------------
# Scenarios (run inside every rank; return JSON-able results)


def _mlp(bias: bool = True) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4, bias=bias))


RANK_KEYS = ("rank", "world_size", "local_rank", "backend", "group_device_type")


def scenario_context(rank: int, world: int) -> dict[str, Any]:
    model, x = _mlp(), torch.ones(2, 8)
    crawled = torchscan.crawl_module(model, args=(x,))
    structure = torchscan.crawl_module(model, args=(x,), mode="structure")
    flops = torchscan.measure_flops(lambda: model(x))
    timed = torchscan.measure_latency(lambda: model(x), device="cpu", warmup=0, min_run_time=0.001, min_repeats=2)
    profiled = torchscan.profile_workload(lambda: model(x), device="cpu")
    contexts = {
        "crawl": crawled["context"],
        "crawl.operator_flops": crawled["operator_flops"]["context"],
        "structure": structure["context"],
        "structure.operator_flops": structure["operator_flops"]["context"],
        "flops": flops["context"],
        "latency": timed["context"],
        "profile": profiled["context"],
    }
    return {name: {key: context.get(key, "absent") for key in RANK_KEYS} for name, context in contexts.items()}


SCENARIOS: dict[str, Callable[[int, int], Any]] = {
    "context": scenario_context,
}


# ---------------------------------------------------------------------------------------------------------------
# Tests


def test_reports_outside_a_process_group_have_no_rank_keys() -> None:
    assert not dist.is_initialized()
    report = torchscan.crawl_module(_mlp(), args=(torch.ones(2, 8),))
    assert not set(RANK_KEYS) & set(report["context"])
    assert not set(RANK_KEYS) & set(report["operator_flops"]["context"])


def test_two_ranks(tmp_path: Path) -> None:
    results = run_ranks(2, ["context"], tmp_path)
    for rank, result in enumerate(results):
        for name, context in result["context"].items():
            assert context == {
                "rank": rank,
                "world_size": 2,
                "local_rank": rank,  # loopback MASTER_ADDR, no LOCAL_RANK: every rank runs here
                "backend": "gloo",
                "group_device_type": "cpu",
            }, name
