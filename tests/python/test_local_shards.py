"""What this rank holds of sharded tensors, read from FSDP2's internals best-effort (extb).

attribution.c reads FSDP2's per-module state (``_get_fsdp_state()._fsdp_param_groups[i].fsdp_params[j]``, each
with ``sharded_param`` and ``_module_info``) to know which shard of a gathered parameter this rank keeps, and
counts the rest whole: "a later release that renames them leaves parameters FSDP2 has gathered counted whole".
These are private names, so each way they may be missing or shaped otherwise is checked here, with modules that
carry such a state of their own. A crawl records local counts only inside a process group: the scenarios run
in a child process with a one-rank gloo group (an in-memory store, no port), as one real fully_shard does.

Model: Linear(4, 3) (weight 12, bias 3: 15 parameters, 60 bytes in float32) then Linear(3, 2) (6 + 2 = 8).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch has no torch.distributed")

SCRIPT = textwrap.dedent(
    '''
    import json, sys
    from types import SimpleNamespace as NS
    import torch
    import torch.distributed as dist
    import torch.distributed.tensor  # the crawl looks for shards only where DTensor is imported
    from torch import nn
    import torchscan

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)

    class Held(nn.Linear):
        """A Linear with an FSDP2-like state of its own (``state`` returns it)."""
        def __init__(self, state):
            super().__init__(4, 3)
            self.state = state
        def _get_fsdp_state(self):
            return self.state(self)

    SIBLING = {}

    def part(state):
        torch.manual_seed(0)
        model = nn.Sequential(Held(state), nn.Linear(3, 2))
        SIBLING["module"] = model[1]
        report = torchscan.crawl_module(model, args=(torch.ones(2, 4),))
        totals = report["totals"]
        rows = {row["path"]: row["parameters"].get("local_elements") for row in report["layers"]}
        return {
            "parameters": totals["parameters"]["value"],
            "local": totals["local_parameters"]["value"],
            "local_bytes": totals["local_parameter_bytes"]["value"],
            "rows": rows,
            "rank": report["context"].get("rank"),
        }

    def param(sharded=None, info=True, shared=None, names=None):
        owner = {}
        def make(module):
            fields = {}
            if sharded is not None:
                fields["sharded_param"] = sharded
            if info:
                mi = {"module": module, "param_name": "weight"}
                if shared is not None:
                    mi["shared_modules"] = shared(module)
                    mi["shared_param_names"] = names
                fields["_module_info"] = NS(**mi)
            return NS(**fields)
        return make

    def state(*params, groups=None):
        def make(module):
            if groups is not None:
                return NS(_fsdp_param_groups=groups)
            return NS(_fsdp_param_groups=[NS(fsdp_params=[p(module) for p in params])])
        return make

    def raising(module):
        raise RuntimeError("no state here")

    local5 = NS(_local_tensor=torch.zeros(5))              # this rank keeps 5 of the weight's 12
    local5_half = NS(_local_tensor=torch.zeros(5, dtype=torch.float16))
    out = {
        "raising state": part(raising),
        "no groups": part(lambda m: NS()),
        "groups not a list": part(state(groups=("not", "a list"))),
        "params not a list": part(state(groups=[NS(fsdp_params=None), NS()])),
        "param without info": part(state(param(sharded=local5, info=False))),
        "param without sharded": part(state(param(sharded=None))),
        "shard kept": part(state(param(sharded=local5))),
        "shard kept float16": part(state(param(sharded=local5_half))),
        "shard not a DTensor": part(state(param(sharded=NS()))),
        "shared names": part(state(param(sharded=local5, shared=lambda m: [m], names=["weight"]))),
        "shared not sequences": part(state(param(sharded=local5, shared=lambda m: 3, names=4))),
        # the same FSDP parameter also registered on the second Linear as its weight
        "shared sibling": part(state(param(sharded=local5, shared=lambda m: [SIBLING["module"]], names=["weight"]))),
        # more shared modules than names: pairs up to the shorter
        "shared uneven": part(
            state(param(sharded=local5, shared=lambda m: [SIBLING["module"], m], names=["weight"]))
        ),
    }

    def failure(state):
        try:
            part(state)
        except Exception as error:  # recorded for the test to check
            return [type(error).__name__, str(error)]
        return None

    class Numel:
        def numel(self):
            raise ValueError("no numel")

    out["local not a tensor"] = failure(state(param(sharded=NS(_local_tensor=Numel()))))
    class PropertyState(nn.Linear):
        @property
        def _get_fsdp_state(self):
            raise RuntimeError("state unreadable")

    torch.manual_seed(0)
    report = torchscan.crawl_module(nn.Sequential(PropertyState(4, 3), nn.Linear(3, 2)), args=(torch.ones(2, 4),))
    out["state unreadable"] = [report["totals"][k]["value"] for k in ("parameters", "local_parameters")]

    # a DTensor buffer on this one-rank mesh: its local tensor is all of it
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (1,))
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    model[1].register_buffer("table", distribute_tensor(torch.zeros(6, 2), mesh, [Shard(0)]))
    report = torchscan.crawl_module(model, args=(torch.ones(2, 4),))
    out["dtensor buffer"] = {
        k: report["totals"][k]["value"]
        for k in ("buffer_elements", "local_buffer_elements", "buffer_bytes", "local_buffer_bytes")
    }
    out["dtensor buffer row"] = report["layers"][2]["buffers"]

    out["unhashable name"] = failure(
        state(param(sharded=local5, shared=lambda m: [SIBLING["module"]], names=[["weight"]]))
    )
    out["local without dtype"] = failure(state(param(sharded=NS(_local_tensor=NS(numel=lambda: 5)))))

    # the real thing on this one-rank group: FSDP2 keeps all of each parameter here
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    fully_shard(model[0])
    fully_shard(model)
    report = torchscan.crawl_module(model, args=(torch.ones(2, 4),))
    out["fully_shard"] = {
        "parameters": report["totals"]["parameters"]["value"],
        "local": report["totals"]["local_parameters"]["value"],
    }
    dist.destroy_process_group()
    print(json.dumps(out))
    '''
)


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ)
    env.update(MASTER_ADDR="127.0.0.1", GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# rows hold their own parameters (the root Sequential none)
WHOLE = {"parameters": 23, "local": 23, "local_bytes": 92, "rows": {"": 0, "0": 15, "1": 8}, "rank": 0}


@pytest.mark.parametrize(
    "name",
    [
        "raising state",
        "no groups",
        "groups not a list",
        "params not a list",
        "param without info",
        "param without sharded",
        "shard not a DTensor",
    ],
)
def test_internals_missing_or_renamed_count_whole(results, name):
    # 15 + 8 = 23 parameters, 92 bytes: every one of them here
    assert results[name] == WHOLE


def test_the_shard_this_rank_keeps(results):
    # the weight (12) counts its local 5: 5 + 3 (bias) = 8 locally on the first Linear, 16 in all;
    # bytes 4 * (5 + 3 + 8) = 64
    kept = {"parameters": 23, "local": 16, "local_bytes": 64, "rows": {"": 0, "0": 8, "1": 8}, "rank": 0}
    assert results["shard kept"] == kept
    # the shard's own dtype sizes its bytes: 5 * 2 + 4 * (3 + 8) = 54
    assert results["shard kept float16"] == dict(kept, local_bytes=54)
    # also registered as a shared parameter of the same module under the same name: the same shard
    assert results["shared names"] == kept
    # shared_modules / shared_param_names that are not sequences are skipped; the owner's shard still counts
    assert results["shared not sequences"] == kept


def test_a_state_attribute_that_raises_counts_whole(results):
    assert results["state unreadable"] == [23, 23]


def test_a_dtensor_buffer_counts_its_local_tensor(results):
    # 6 * 2 float32 elements, all on this rank: 12 elements, 48 bytes, globally and locally
    expected = {"buffer_elements": 12, "local_buffer_elements": 12, "buffer_bytes": 48, "local_buffer_bytes": 48}
    assert results["dtensor buffer"] == expected
    assert results["dtensor buffer row"]["local_elements"] == 12


def test_a_parameter_shared_with_another_module(results):
    # the second Linear's weight (6) is the same FSDP parameter: this rank keeps 5 of it too.
    # Local: 5 + 3 on the first Linear, 5 + 2 on the second = 15 elements, 60 bytes
    shared = {"parameters": 23, "local": 15, "local_bytes": 60, "rows": {"": 0, "0": 8, "1": 7}, "rank": 0}
    assert results["shared sibling"] == shared
    assert results["shared uneven"] == shared


def test_a_shard_that_does_not_read_as_a_tensor_is_the_crawls_error(results):
    # a parameter name that cannot key the shard map is the crawl's error (read before the forward)
    assert results["unhashable name"] == ["TypeError", "unhashable type: 'list'"]
    # the shard's local tensor is read for its numel and dtype: what it raises is the crawl's exception
    assert results["local not a tensor"] == ["ValueError", "no numel"]
    assert results["local without dtype"] == [
        "AttributeError",
        "'types.SimpleNamespace' object has no attribute 'dtype'",
    ]


def test_fully_shard_on_one_rank_keeps_everything(results):
    assert results["fully_shard"] == {"parameters": 23, "local": 23}
