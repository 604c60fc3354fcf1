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
import re
import signal
import subprocess
import sys
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
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "measure_distributed.py"


# ---------------------------------------------------------------------------------------------------------------
# Starting ranks


def _worker(rank: int, world: int, scenarios: list[str], out: str) -> None:
    # The ranks meet through a file store (no port to pick, so no race with other programs for one); gloo's own
    # connections stay on loopback. MASTER_ADDR says every rank runs here (local_rank's rule).
    os.environ.update(MASTER_ADDR="127.0.0.1", GLOO_SOCKET_IFNAME="lo")
    os.environ.pop("LOCAL_RANK", None)
    os.environ.pop("LOCAL_WORLD_SIZE", None)
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{out}/store", rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )
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
        _worker, args=(world, scenarios, str(tmp_path)), nprocs=world, join=False, start_method="spawn"
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
        assert all(process.exitcode is not None for process in context.processes), "a rank was left running"
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


def _flops(report: dict[str, Any]) -> dict[str, Any]:
    """What the tests read of a FlopReport."""
    return {
        "status": report["total"]["status"],
        "total": report["total"]["known_value"],
        "by_operator": report["by_operator"],
        "ignored": sorted(report["ignored_operators"]),
        "collectives": report.get("collectives"),
        "collective_bytes": report.get("collective_bytes"),
        "diagnostics": [d["code"] + ":" + d.get("operator", "") for d in report["diagnostics"]],
    }


def scenario_collectives(rank: int, world: int) -> dict[str, Any]:
    """Each collective alone: 0 FLOPs, its bytes moved."""
    import torch.distributed._functional_collectives as funcol

    t = torch.ones(4, 8)  # float32: 128 bytes
    half = torch.ones(2, 3, dtype=torch.bfloat16)  # 12 bytes
    wide = torch.ones(4 * world, 2)  # a reduce-scatter's input: 32 * world bytes
    workloads = {
        "all_reduce": lambda: dist.all_reduce(t),
        "broadcast": lambda: dist.broadcast(t, 0),
        "all_gather": lambda: dist.all_gather([torch.empty(2, 3, dtype=torch.bfloat16) for _ in range(world)], half),
        "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(torch.empty(4 * world, 8), t),
        "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(torch.empty(4, 2), wide),
        "all_to_all_single": lambda: dist.all_to_all_single(torch.empty(4 * world, 2), wide),
        "barrier": lambda: dist.barrier(),
        "functional all_reduce": lambda: funcol.all_reduce(t, "sum", dist.group.WORLD).wait(),
        "functional all_gather": lambda: funcol.all_gather_tensor(t, 0, dist.group.WORLD).wait(),
    }
    return {name: _flops(torchscan.measure_flops(workload)) for name, workload in workloads.items()}


def scenario_tensor_parallel(rank: int, world: int) -> dict[str, Any]:
    """A Linear pair sharded column-wise then row-wise (DTensor) on a CPU mesh; FLOPs on the local shapes."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (world,))
    x = torch.ones(2, 8)
    out: dict[str, Any] = {}
    for bias in (False, True):
        plain = _mlp(bias)
        sharded = parallelize_module(_mlp(bias), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        with torch.no_grad():
            assert torch.allclose(sharded(x), plain(x), atol=1e-5)
        out[f"bias={bias}"] = {
            "plain": _flops(torchscan.measure_flops(lambda: plain(x))),
            "sharded": _flops(torchscan.measure_flops(lambda: sharded(x))),
            "crawl": _flops(torchscan.crawl_module(sharded, args=(x,))["operator_flops"]),
        }
    return out


def scenario_data_parallel(rank: int, world: int) -> dict[str, Any]:
    """One training step of a DDP-wrapped MLP on this rank's batch, and the same step of the plain model."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(rank)
    x = torch.randn(3, 8)
    plain, wrapped = _mlp(), DistributedDataParallel(_mlp())

    def step(model: nn.Module) -> None:
        model(x).sum().backward()

    for model in (plain, wrapped):  # DDP's first step builds its buckets; then both start with no gradients
        step(model)
        model.zero_grad(set_to_none=True)
    return {
        "plain": _flops(torchscan.measure_flops(lambda: step(plain))),
        "ddp": _flops(torchscan.measure_flops(lambda: step(wrapped))),
        "trainable": sum(p.numel() for p in plain.parameters()),
    }


def scenario_fsdp(rank: int, world: int) -> dict[str, Any]:
    """FSDP2 (fully_shard) on each Linear and the root: a forward and a training step."""
    from torch.distributed.fsdp import fully_shard

    model, x = _mlp(), torch.ones(2, 8)
    fully_shard(model[0])
    fully_shard(model[2])
    fully_shard(model)

    def step() -> None:
        model(x).sum().backward()

    plain = _mlp()
    return {
        "plain forward": _flops(torchscan.measure_flops(lambda: plain(x))),
        "plain step": _flops(torchscan.measure_flops(lambda: plain(x).sum().backward())),
        "forward": _flops(torchscan.measure_flops(lambda: model(x))),
        "step": _flops(torchscan.measure_flops(step)),
        "crawl": _flops(torchscan.crawl_module(model, args=(x,))["operator_flops"]),
    }


def _odd_mlp(bias: bool = True) -> nn.Sequential:
    """229 parameters (with biases); 5 outputs, which no world size above 1 here divides."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5, bias=bias))


def _parameters(report: dict[str, Any]) -> dict[str, Any]:
    """What the tests read of an AnalysisReport's parameters: totals and rows, global and local."""
    totals = report["totals"]
    return {
        "totals": {
            name: totals[name]["value"] if name in totals else None
            for name in ("parameters", "parameter_bytes", "local_parameters", "local_parameter_bytes",
                         "buffer_elements", "local_buffer_elements")
        },
        "local_metric": {key: totals["local_parameters"][key] for key in ("unit", "scope", "method")}
        if "local_parameters" in totals else None,
        "rows": {
            layer["path"].removeprefix("module.").removeprefix("module"): {
                "elements": layer["parameters"]["trainable"] + layer["parameters"]["frozen"],
                "bytes": layer["parameters"]["bytes"],
                "local_elements": layer["parameters"].get("local_elements"),
                "local_bytes": layer["parameters"].get("local_bytes"),
                "buffer_local": layer["buffers"].get("local_elements"),
            }
            for layer in report["layers"]
        },
    }


def scenario_sharded_parameters(rank: int, world: int) -> dict[str, Any]:
    """The same model plain, under DDP, FSDP2 and tensor parallelism: global counts and this rank's part."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.nn.parallel import DistributedDataParallel

    x = torch.ones(2, 8)
    out = {"plain": _parameters(torchscan.crawl_module(_odd_mlp(), args=(x,)))}
    out["ddp"] = _parameters(torchscan.crawl_module(DistributedDataParallel(_odd_mlp()), args=(x,)))
    fsdp = _odd_mlp()
    fully_shard(fsdp[0])
    fully_shard(fsdp)  # the root's group holds the second Linear: still gathered (whole) after a forward
    out["fsdp"] = _parameters(torchscan.crawl_module(fsdp, args=(x,)))
    out["fsdp again"] = _parameters(torchscan.crawl_module(fsdp, args=(x,)))
    out["fsdp structure"] = _parameters(torchscan.crawl_module(fsdp, args=(x,), mode="structure"))
    mesh = init_device_mesh("cpu", (world,))
    for bias in (False, True):
        model = parallelize_module(_odd_mlp(bias), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        out[f"tp bias={bias}"] = _parameters(torchscan.crawl_module(model, args=(x,)))
    out["tp plain bias=False"] = _parameters(torchscan.crawl_module(_odd_mlp(False), args=(x,)))
    return out


def _outcome(call: Callable[[], Any]) -> dict[str, Any]:
    """A call's result, or what it raised."""
    try:
        return {"result": call()}
    except Exception as error:  # noqa: BLE001 - recorded for the test
        return {"raised": type(error).__name__, "message": str(error)}


def scenario_gather(rank: int, world: int) -> dict[str, Any]:
    """Reports whose numbers depend on the rank (FLOPs exactly, latency through a rank that sleeps on purpose),
    gathered on rank 0 and on the last rank."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    w = torch.ones(8, 8)
    rows = torch.ones(rank + 1, 8)  # rank r multiplies (r + 1) rows: 2 * (r + 1) * 8 * 8 FLOPs
    flops = torchscan.measure_flops(lambda: rows @ w)
    sleeper = world - 1

    def work() -> None:
        time.sleep(0.05 if rank == sleeper else 0.002)

    timed = torchscan.measure_latency(work, device="cpu", warmup=0, min_run_time=0.05, min_repeats=2)
    mesh = init_device_mesh("cpu", (world,))
    model = parallelize_module(_mlp(False), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    crawled = torchscan.crawl_module(model, args=(torch.ones(2, 8),))
    return {
        "flops": _outcome(lambda: torchscan.gather_reports(flops)),
        "flops on the last rank": _outcome(lambda: torchscan.gather_reports(flops, dst=world - 1, timeout=30)),
        "latency": _outcome(lambda: torchscan.gather_reports(timed)),
        "crawl": _outcome(lambda: torchscan.gather_reports(crawled, timeout=timedelta(seconds=30))),
    }


def scenario_gather_failures(rank: int, world: int) -> dict[str, Any]:
    """A rank that raises inside gather_reports, a rank with a different model, ranks that disagree on dst: every
    rank raises the same error, and the group is usable afterwards."""
    x = torch.ones(2, 8)
    good = torchscan.crawl_module(_mlp(), args=(x,))
    other = torchscan.crawl_module(nn.Sequential(nn.Linear(8, 4)), args=(x,)) if rank == 1 else good
    wider = torchscan.crawl_module(_mlp(), args=(torch.ones(3, 8),)) if rank == world - 1 else good
    out = {
        "raises inside": _outcome(lambda: torchscan.gather_reports(good if rank != 1 else {"not": "a report"})),
        "different model": _outcome(lambda: torchscan.gather_reports(other)),
        "different inputs": _outcome(lambda: torchscan.gather_reports(wider)),
        "different kinds": _outcome(
            lambda: torchscan.gather_reports(good if rank != 1 else torchscan.measure_flops(lambda: x + 1))
        ),
        "different dst": _outcome(lambda: torchscan.gather_reports(good, dst=rank)),
        "bad dst": _outcome(lambda: torchscan.gather_reports(good, dst=world)),
        "after": _outcome(lambda: torchscan.gather_reports(good) is not None),
    }
    return out


def scenario_gather_timeout(rank: int, world: int) -> dict[str, Any]:
    """The last rank never calls gather_reports: the others' wait ends at the timeout. (Last scenario of a start:
    the ranks' call numbers differ afterwards.)"""
    x = torch.ones(2, 8)
    report = torchscan.crawl_module(_mlp(), args=(x,))
    if rank == world - 1:
        time.sleep(0.2)
        outcome = {"result": "did not call"}
    else:
        started = time.monotonic()
        outcome = _outcome(lambda: torchscan.gather_reports(report, timeout=2.0))
        outcome["waited"] = time.monotonic() - started
    dist.barrier()  # every rank is past the timeout before any rank leaves the group
    return {"outcome": outcome}


SCENARIOS: dict[str, Callable[[int, int], Any]] = {
    "context": scenario_context,
    "collectives": scenario_collectives,
    "tensor_parallel": scenario_tensor_parallel,
    "data_parallel": scenario_data_parallel,
    "fsdp": scenario_fsdp,
    "sharded_parameters": scenario_sharded_parameters,
    "gather": scenario_gather,
    "gather_failures": scenario_gather_failures,
    "gather_timeout": scenario_gather_timeout,
}


# ---------------------------------------------------------------------------------------------------------------
# Tests


def test_reports_outside_a_process_group_have_no_rank_keys() -> None:
    assert not dist.is_initialized()
    report = torchscan.crawl_module(_mlp(), args=(torch.ones(2, 8),))
    assert not set(RANK_KEYS) & set(report["context"])
    assert not set(RANK_KEYS) & set(report["operator_flops"]["context"])


def check_context(results: list[dict[str, Any]]) -> None:
    world = len(results)
    for rank, result in enumerate(results):
        for name, context in result["context"].items():
            assert context == {
                "rank": rank,
                "world_size": world,
                "local_rank": rank,  # loopback MASTER_ADDR, no LOCAL_RANK: every rank runs here
                "backend": "gloo",
                "group_device_type": "cpu",
            }, name


def _moved(report: dict[str, Any], op: str) -> tuple[int, int]:
    entry = report["collectives"][op]
    return entry["calls"], entry["bytes_moved"]


def check_collectives(results: list[dict[str, Any]]) -> None:
    """Every collective: recognised (in by_operator at 0 FLOPs, total complete, no diagnostic), its bytes moved
    by the message-size convention, worked out from the shapes."""
    world = len(results)
    expected = {  # name: (packet, bytes)
        "all_reduce": ("c10d.allreduce_", 4 * 8 * 4),
        "broadcast": ("c10d.broadcast_", 4 * 8 * 4),
        "all_gather": ("c10d.allgather_", world * 2 * 3 * 2),  # every rank's bf16 (2, 3)
        "all_gather_into_tensor": ("c10d._allgather_base_", world * 4 * 8 * 4),
        "reduce_scatter_tensor": ("c10d._reduce_scatter_base_", world * 4 * 2 * 4),  # the whole input
        "all_to_all_single": ("c10d.alltoall_base_", world * 4 * 2 * 4),
        "barrier": ("c10d.barrier", 0),
        "functional all_reduce": ("_c10d_functional.all_reduce", 4 * 8 * 4),
        "functional all_gather": ("_c10d_functional.all_gather_into_tensor", world * 4 * 8 * 4),
    }
    for result in results:
        for name, (packet, moved) in expected.items():
            report = result["collectives"][name]
            assert report["status"] == "complete" and report["total"] == 0, name
            assert report["by_operator"] == {packet: 0}, name
            assert not report["diagnostics"], name
            assert report["collectives"] == {packet: {"calls": 1, "bytes_moved": moved}}, name
            assert report["collective_bytes"] == {
                "status": "complete",
                "value": moved,
                "known_value": moved,
                "unit": "bytes",
                "scope": "workload",
                "method": "torchscan_collective_bytes_v1",
            }, name
        # the functional collectives' waits and autograd wrappers are bookkeeping, listed as ignored
        assert "_c10d_functional.wait_tensor" in result["collectives"]["functional all_reduce"]["ignored"]


def check_tensor_parallel(results: list[dict[str, Any]]) -> None:
    """Counted on each rank's local shapes: the sum over ranks is the single-process count; RowwiseParallel's bias
    adds one division per bias element on every rank (DTensor turns the replicated bias into a partial sum)."""
    world = len(results)
    for bias in (False, True):
        key = f"bias={bias}"
        plain = results[0]["tensor_parallel"][key]["plain"]
        assert plain["status"] == "complete" and plain["total"] == 800  # 2*2*8*16 + 16*2 ReLU + 2*2*16*4
        for kind in ("sharded", "crawl"):
            reports = [result["tensor_parallel"][key][kind] for result in results]
            for report in reports:
                assert report["status"] == "complete" and not report["diagnostics"], (key, kind)
                # the row-parallel output (2, 4) float32 is summed over the ranks: 32 bytes
                assert report["collectives"] == {"_c10d_functional.all_reduce": {"calls": 1, "bytes_moved": 32}}
            total = sum(report["total"] for report in reports)
            assert total == plain["total"] + (world * 4 if bias else 0), (key, kind)
            if bias:
                assert all(report["by_operator"]["aten.div"] == 4 for report in reports)
            for op in ("aten.addmm", "aten.mm", "aten.relu"):
                assert sum(r["by_operator"].get(op, 0) for r in reports) == plain["by_operator"].get(op, 0), op


def check_data_parallel(results: list[dict[str, Any]]) -> None:
    """DDP: each rank's step counts what the plain model's step of the same batch counts, plus the documented
    gradient averaging: one multiply by 1/world_size per gradient element (P = 212 trainable parameters)."""
    for result in results:
        plain, ddp, trainable = result["data_parallel"]["plain"], result["data_parallel"]["ddp"], 212
        assert result["data_parallel"]["trainable"] == trainable
        assert plain["status"] == ddp["status"] == "complete" and not ddp["diagnostics"]
        assert ddp["total"] == plain["total"] + trainable
        extra = {op: n - plain["by_operator"].get(op, 0) for op, n in ddp["by_operator"].items()}
        assert {op: n for op, n in extra.items() if n} == {"aten.mul": trainable}
        # the gradient bucket: 212 float32 = 848 bytes, all-reduced once
        assert _moved(ddp, "c10d.allreduce_") == (1, 212 * 4)


def check_fsdp(results: list[dict[str, Any]]) -> None:
    """FSDP2 runs the whole model on every rank: the plain counts, complete, with its all-gathers (the whole
    parameters, 212 float32) and reduce-scatters (the whole gradients) in bytes."""
    for result in results:
        fsdp = result["fsdp"]
        for kind, plain in (("forward", "plain forward"), ("crawl", "plain forward"), ("step", "plain step")):
            report = fsdp[kind]
            assert report["status"] == "complete" and not report["diagnostics"], kind
            assert report["total"] == fsdp[plain]["total"], kind
            flops = {op: n for op, n in report["by_operator"].items() if not op.startswith("c10d.")}
            assert flops == fsdp[plain]["by_operator"], kind
            assert "fsdp.all_gather_copy_in" in report["ignored"], kind
        assert _moved(fsdp["forward"], "c10d._allgather_base_") == (2, 212 * 4)
        assert _moved(fsdp["step"], "c10d._reduce_scatter_base_") == (2, 212 * 4)


def check_sharded_parameters(results: list[dict[str, Any]]) -> None:
    """Global counts as the unsharded model's on every rank and every wrapping; the local parts add up to them
    over the ranks (DDP: a whole replica per rank; a replicated row-parallel bias: held by every rank)."""
    world = len(results)
    plain = results[0]["sharded_parameters"]["plain"]
    assert plain["totals"]["parameters"] == 229 and plain["totals"]["parameter_bytes"] == 229 * 4
    assert plain["local_metric"] == {"unit": "elements", "scope": "rank", "method": "pytorch_local_shard"}
    for kind in ("ddp", "fsdp", "fsdp again", "fsdp structure", "tp bias=True", "tp bias=False"):
        reference = plain if kind != "tp bias=False" else results[0]["sharded_parameters"]["tp plain bias=False"]
        reports = [result["sharded_parameters"][kind] for result in results]
        for report in reports:
            for name in ("parameters", "parameter_bytes", "buffer_elements"):
                assert report["totals"][name] == reference["totals"][name], (kind, name)
            for path, row in reference["rows"].items():
                assert report["rows"][path]["elements"] == row["elements"], (kind, path)
                assert report["rows"][path]["bytes"] == row["bytes"], (kind, path)
        local = sum(report["totals"]["local_parameters"] for report in reports)
        local_bytes = sum(report["totals"]["local_parameter_bytes"] for report in reports)
        if kind == "ddp":
            expected = world * reference["totals"]["parameters"]
        elif kind == "tp bias=True":
            expected = reference["totals"]["parameters"] + (world - 1) * 5  # the second Linear's bias, replicated
        else:
            expected = reference["totals"]["parameters"]
        assert local == expected, kind
        assert local_bytes == 4 * expected, kind
        for path, row in reference["rows"].items():
            rows = [report["rows"][path] for report in reports]
            extra = (world - 1) * 5 if kind == "tp bias=True" and path == "2" else 0
            factor = world if kind == "ddp" else 1
            assert sum(r["local_elements"] for r in rows) == factor * row["elements"] + extra, (kind, path)
            assert all(r["buffer_local"] == 0 for r in rows), (kind, path)
        if kind.startswith("fsdp") and world > 1:
            # FSDP2 pads its dim-0 shards: 5 output rows are split unevenly, and the last rank holds the fewest
            assert reports[0]["rows"]["2"]["local_elements"] > reports[-1]["rows"]["2"]["local_elements"]


def _oracle(values: list[float], ranks: list[int]) -> dict[str, dict[str, Any]]:
    """min, lower median and max with their ranks, by a sort here (the engine's are C)."""
    order = sorted(zip(values, ranks))  # ties: the lower rank first
    least = min(order, key=lambda vr: vr[0])
    most = max(order, key=lambda vr: (vr[0], -vr[1]))  # the lowest rank among the largest values
    middle = order[(len(order) - 1) // 2]
    return {
        "min": {"value": least[0], "rank": least[1]},
        "median": {"value": middle[0], "rank": middle[1]},
        "max": {"value": most[0], "rank": most[1]},
    }


def check_stats(stats: dict[str, Any], values: list[Any], ranks: list[int], summed: bool = True) -> None:
    assert stats["status"] == "complete"
    assert stats["values"] == values and stats["known_values"] == values
    for key, expected in _oracle(values, ranks).items():
        assert stats[key] == expected, (key, stats[key], expected)
    assert stats["sum"] == (sum(values) if summed else None)


def check_gather(results: list[dict[str, Any]]) -> None:
    world = len(results)
    ranks = list(range(world))
    for name, dst in (("flops", 0), ("flops on the last rank", world - 1), ("latency", 0), ("crawl", 0)):
        for rank, result in enumerate(results):
            outcome = result["gather"][name]
            assert "raised" not in outcome, (name, outcome)
            assert (outcome["result"] is None) == (rank != dst), (name, rank)

    # FLOPs that depend on the rank: 2 * (r + 1) * 8 * 8
    for name, dst in (("flops", 0), ("flops on the last rank", world - 1)):
        gathered = results[dst]["gather"][name]["result"]
        assert gathered["schema_version"] == 1
        assert gathered["context"] == {
            "method": "torchscan_gather_reports",
            "report_type": "FlopReport",
            "world_size": world,
            "ranks": ranks,
        }
        assert [report["context"]["rank"] for report in gathered["reports"]] == ranks
        values = [128 * (r + 1) for r in ranks]
        check_stats(gathered["operator_flops"]["total"], values, ranks)
        assert gathered["operator_flops"]["total"]["median"] == {"value": 128 * ((world - 1) // 2 + 1),
                                                                 "rank": (world - 1) // 2}
        check_stats(gathered["operator_flops"]["by_operator"]["aten.mm"], values, ranks)
        assert "totals" not in gathered and "layers" not in gathered

    # latency: the rank that sleeps 50 ms per call is the slowest, and seconds have no sum
    gathered = results[0]["gather"]["latency"]["result"]
    latency = gathered["totals"]["latency"]
    check_stats(latency, latency["values"], ranks, summed=False)
    assert latency["max"]["rank"] == world - 1 and latency["max"]["value"] >= 0.05
    assert all(value < 0.05 for value in latency["values"][:-1])
    assert gathered["totals"]["throughput"]["sum"] is None  # a rate
    assert gathered["totals"]["throughput"]["min"]["rank"] == world - 1

    # a tensor-parallel crawl: local FLOPs sum to the single-process count, local shards to the parameters
    gathered = results[0]["gather"]["crawl"]["result"]
    totals = gathered["totals"]
    assert totals["operator_flops"]["sum"] == 800
    assert totals["local_parameters"]["sum"] == totals["parameters"]["values"][0] == 144 + 64
    check_stats(totals["operator_flops"], [800 // world] * world, ranks)
    moved = gathered["operator_flops"]["collectives"]["_c10d_functional.all_reduce"]
    check_stats(moved, [32] * world, ranks)
    assert moved["unit"] == "bytes" and moved["method"] == "torchscan_collective_bytes_v1"
    layers = gathered["layers"]
    assert [(row["path"], row["call_index"]) for row in layers] == [
        (layer["path"], layer["call_index"]) for layer in gathered["reports"][0]["layers"]
    ]
    for index, row in enumerate(layers):
        per_rank = [report["layers"][index]["metrics"]["operator_flops"]["value"] for report in gathered["reports"]]
        check_stats(row["metrics"]["operator_flops"], per_rank, ranks)


def check_gather_failures(results: list[dict[str, Any]]) -> None:
    """Every rank raises the same error, naming the rank at fault; the group works afterwards."""
    world = len(results)
    expected = {
        "raises inside": ("ValueError", "gather_reports failed on rank 1: ValueError: report must be"),
        "different model": ("ValueError", "rank 1's layer calls (module paths, types and parameter counts) differ"),
        "different inputs": ("ValueError", f"rank {world - 1}'s inputs (shapes, dtypes, structure) differ"),
        "different kinds": ("ValueError", "rank 1 passed a FlopReport, rank 0 an AnalysisReport"),
        "different dst": ("ValueError", "the ranks disagree on dst: rank 1 passed dst=1, rank 0 dst=0"),
        "bad dst": ("ValueError", "gather_reports failed on rank 0: ValueError: dst must be the global rank"),
    }
    for name, (kind, text) in expected.items():
        outcomes = [result["gather_failures"][name] for result in results]
        assert all(outcome == outcomes[0] for outcome in outcomes), (name, outcomes)
        assert outcomes[0]["raised"] == kind and text in outcomes[0]["message"], (name, outcomes[0])
    assert [result["gather_failures"]["after"] for result in results] == [{"result": rank == 0} for rank in
                                                                          range(world)]


def check_gather_timeout(results: list[dict[str, Any]]) -> None:
    world = len(results)
    assert results[-1]["gather_timeout"]["outcome"] == {"result": "did not call"}
    for result in results[:-1]:
        outcome = result["gather_timeout"]["outcome"]
        assert outcome["raised"] == "TimeoutError", outcome
        assert f"rank(s) {world - 1} of the group did not call gather_reports within 2 s" in outcome["message"]
        assert 1.9 <= outcome["waited"] < 30


def test_two_ranks(tmp_path: Path) -> None:
    scenarios = ["context", "collectives", "tensor_parallel", "data_parallel", "fsdp", "sharded_parameters", "gather",
                 "gather_failures", "gather_timeout"]
    results = run_ranks(2, scenarios, tmp_path)
    for result in results:
        failed = {name: value for name, value in result.items() if "raised" in value}
        assert not failed, failed
    check_context(results)
    check_collectives(results)
    check_tensor_parallel(results)
    check_data_parallel(results)
    check_fsdp(results)
    check_sharded_parameters(results)
    check_gather(results)
    check_gather_failures(results)
    check_gather_timeout(results)


def test_four_ranks(tmp_path: Path) -> None:
    scenarios = ["context", "collectives", "tensor_parallel", "data_parallel", "fsdp", "sharded_parameters", "gather",
                 "gather_failures", "gather_timeout"]
    results = run_ranks(4, scenarios, tmp_path)
    for result in results:
        failed = {name: value for name, value in result.items() if "raised" in value}
        assert not failed, failed
    check_context(results)
    check_collectives(results)
    check_tensor_parallel(results)
    check_data_parallel(results)
    check_fsdp(results)
    check_sharded_parameters(results)
    check_gather(results)
    check_gather_failures(results)
    check_gather_timeout(results)


# ---------------------------------------------------------------------------------------------------------------
# docs/distributed.md's example, through torchrun


def test_the_page_shows_the_example_script() -> None:
    page = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert EXAMPLE.read_text(encoding="utf-8") in blocks
    assert "torchrun --standalone --nproc-per-node 2 docs/examples/measure_distributed.py" in page
    assert "docs/distributed.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_example_runs_under_torchrun() -> None:
    """``torchrun --standalone --nproc-per-node 2`` (torch.distributed.run is the program torchrun runs), bounded,
    its whole process group killed on a timeout; rank 0's numbers against a single-process count."""
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(EXAMPLE)]
    child = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = child.communicate(timeout=START_TIMEOUT)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)  # torchrun and its ranks
            child.communicate()
    assert child.returncode == 0, err[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("summary: ")]
    assert len(lines) == 1, out  # printed by rank 0 only
    summary = json.loads(lines[0].removeprefix("summary: "))

    torch.manual_seed(0)
    plain = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    parameters = sum(p.numel() for p in plain.parameters())
    assert parameters == 2762
    expected = []
    for rank in (0, 1):
        batch = torch.randn(16, 32, generator=torch.Generator().manual_seed(rank))
        plain.zero_grad(set_to_none=True)
        step = torchscan.measure_flops(lambda: plain(batch).sum().backward())  # noqa: B023 - called at once
        expected.append(step["total"]["value"] + parameters)  # + DDP's multiply per gradient element
    assert summary == {
        "ranks": [0, 1],
        "flops": expected,
        "allreduce_bytes": [parameters * 4] * 2,
        "parameters": [parameters] * 2,
        "slowest": summary["slowest"],
    }
    assert summary["slowest"] in (0, 1)
