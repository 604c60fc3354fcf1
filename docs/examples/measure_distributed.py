"""Measure a data-parallel training step on every rank and gather the reports on rank 0.

On one CPU machine, two ranks:

    torchrun --standalone --nproc-per-node 2 docs/examples/measure_distributed.py
"""

import json

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import torchscan


def main() -> None:
    dist.init_process_group("gloo")  # torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights on every rank
    plain = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    model = DistributedDataParallel(plain)
    batch = torch.randn(16, 32, generator=torch.Generator().manual_seed(rank))  # each rank: its own batch

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(batch).sum().backward()  # DDP all-reduces the gradients here

    def local_step() -> None:
        plain.zero_grad(set_to_none=True)
        plain(batch).sum().backward()  # the same work without DDP: no collective

    step()  # DDP's first step builds its gradient buckets

    # One call on every rank: each rank counts its own step (its batch, DDP's averaging, the all-reduce's bytes).
    flops = torchscan.measure_flops(step)
    # Timing calls a workload as often as each rank's clock says: time rank-local work, never a collective.
    timed = torchscan.measure_latency(local_step, device="cpu", work_units=16, work_unit="samples")
    model_report = torchscan.crawl_module(model, args=(batch,))

    # Every rank calls gather_reports with its own report; rank 0 gets the gathered report, the others None.
    gathered_flops = torchscan.gather_reports(flops, timeout=60)
    gathered_time = torchscan.gather_reports(timed, timeout=60)
    gathered_model = torchscan.gather_reports(model_report, timeout=60)
    if rank == 0:
        step_flops = gathered_flops["operator_flops"]["total"]
        latency = gathered_time["totals"]["latency"]
        allreduce = gathered_flops["operator_flops"]["collectives"]["c10d.allreduce_"]
        parameters = gathered_model["totals"]["parameters"]
        print(f"ranks {gathered_flops['context']['ranks']}: {step_flops['sum']} operator FLOPs per step in all")
        print(f"slowest rank {latency['max']['rank']}: {latency['max']['value'] * 1e6:.0f} us per local step "
              f"(median {latency['median']['value'] * 1e6:.0f} us)")
        print(f"all-reduced per step on each rank: {allreduce['values']} bytes")
        print(f"parameters: {parameters['values'][0]} on every rank")
        summary = {
            "ranks": gathered_flops["context"]["ranks"],
            "flops": step_flops["values"],
            "allreduce_bytes": allreduce["values"],
            "parameters": parameters["values"],
            "slowest": latency["max"]["rank"],
        }
        print("summary:", json.dumps(summary))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
