"""Collectives counted in this process (src/ext/counter.c's collective bytes, src/ext/op_resolve.c's per-rank
Tensor[][] arguments): a one-rank gloo group in the test process itself (test_distributed.py runs its ranks in
child processes). Bytes moved follow torchscan_collective_bytes_v1 (docs/operator-flops.md: the whole gathered
output, the reduced tensor, the sum of a list's tensors), worked out by hand from the shapes; FLOPs are 0."""

from __future__ import annotations

import os
import warnings

import pytest
import torch
import torch.distributed as dist

from torchscan import measure_flops

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="this PyTorch has no gloo"
)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    assert not dist.is_initialized()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    store = tmp_path_factory.mktemp("gloo") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


class _UnreadableNumel(torch.Tensor):
    def numel(self):
        raise RuntimeError("no element count")


def _bytes(report):
    assert report["by_operator"] == dict.fromkeys(report["collectives"], 0)
    return {op: entry["bytes_moved"] for op, entry in report["collectives"].items()}


def test_collectives_of_one_rank_count_their_message_bytes(one_rank):
    t = torch.ones(4, 8)  # float32: 4 * 8 * 4 = 128 bytes
    half = torch.ones(2, 3, dtype=torch.bfloat16)  # 2 * 3 * 2 = 12 bytes
    cases = {
        "all_reduce": (lambda: dist.all_reduce(t), {"c10d.allreduce_": 128}),
        # Tensor[][] outputs (one list per rank): the whole gathered output
        "all_gather": (
            lambda: dist.all_gather([torch.empty(2, 3, dtype=torch.bfloat16)], half),
            {"c10d.allgather_": 12},
        ),
        # a coalesced gather of two tensors: 4 * 4 + 2 * 3 * 4 = 40 bytes
        "all_gather_coalesced": (
            lambda: dist.all_gather_coalesced([[torch.empty(4), torch.empty(2, 3)]], [torch.ones(4), torch.ones(2, 3)]),
            {"c10d.allgather_coalesced_": 40},
        ),
        "gather": (lambda: dist.gather(t, [torch.empty(4, 8)], dst=0), {"c10d.gather_": 128}),
    }
    for name, (workload, expected) in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # all_gather_coalesced is deprecated
            report = measure_flops(workload)
        assert _bytes(report) == expected, name
        assert report["total"] == {**report["total"], "status": "complete", "value": 0}, name
        assert report["collective_bytes"]["status"] == "complete", name
        assert report["collective_bytes"]["value"] == sum(expected.values()), name
        assert report["diagnostics"] == [], name
        assert report["context"]["world_size"] == 1 and report["context"]["rank"] == 0
    torch.testing.assert_close(t, torch.ones(4, 8))  # the sum over one rank


def test_a_collective_whose_buffer_size_cannot_be_read_moves_unknown_bytes(one_rank):
    odd = torch.empty(2, 3).as_subclass(_UnreadableNumel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = measure_flops(
            lambda: dist.all_gather_coalesced([[torch.empty(4), odd]], [torch.ones(4), torch.ones(2, 3)])
        )
    # the list's second tensor has no element count: the bytes are unknown, a lower bound of 0 (not a complete 0)
    assert report["collective_bytes"]["status"] == "partial" and report["collective_bytes"]["known_value"] == 0
    assert report["total"]["status"] == "partial"
    (diag,) = report["diagnostics"]
    assert diag["operator"] == "c10d.allgather_coalesced_" and diag["code"] == "unsupported_operator_formula"
    assert "bytes moved cannot be counted" in diag["message"]
