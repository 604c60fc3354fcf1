"""Python allocation failures: one failing allocation at a time, N = 1, 2, ... (``_testcapi.set_nomemory``).

Every call either returns the report of a call without failure or raises; the model is left as it was (no hook, no
wrapper, no dispatch mode, its training flags), and no claim of a failed crawl refuses the next crawl. The loop ends
after 300 runs in a row that succeed (the call's allocations are all behind). It runs in a child process, so that a
crash fails the test instead of ending pytest. PyTorch turns some of its own failures into RuntimeError (its argument
parser, its mode checks) or SystemError (``_push_on_torch_dispatch_stack`` and ``Tensor.__instancecheck__`` return a
result with the MemoryError set): those come from torch, not from TorchScan, and are counted apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

_testcapi = pytest.importorskip("_testcapi")

SCRIPT = textwrap.dedent(
    """
    import collections, json, sys, _testcapi, torch
    from torch import nn
    sys.path.insert(0, sys.argv[1])
    from conftest import assert_nothing_left, training_flags
    from torchscan import compare_reports, crawl_module, estimate_memory, measure_flops

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).train()
    x = torch.rand(1, 3, 8, 8)
    before = crawl_module(nn.Sequential(nn.Conv2d(3, 2, 3)), (3, 8, 8))
    after = crawl_module(model, args=(x,))
    calls = {
        "crawl_module": lambda: crawl_module(model, args=(x,)),
        "measure_flops": lambda: measure_flops(lambda: model(x), modules=model),
        "compare_reports": lambda: compare_reports(before, after),
        "estimate_memory": lambda: estimate_memory(lambda: model(x), modules=model, timeline=True),
    }
    flags = training_flags(model)
    results = {}
    for name, call in calls.items():
        expected = call()
        outcomes = collections.Counter()
        streak = n = 0
        while streak < 300 and n < 20000:
            n += 1
            result = None
            _testcapi.set_nomemory(n, n + 1)
            try:
                result = call()
            except MemoryError:
                outcomes["MemoryError"] += 1
            except Exception as error:
                text = str(error)
                outcomes["stale claim" if "already observed" in text else "other " + type(error).__name__] += 1
            finally:
                _testcapi.remove_mem_hooks()
            assert_nothing_left(model)
            assert training_flags(model) == flags, n
            if result is None:
                streak = 0
            elif result == expected:
                streak += 1
                outcomes["same"] += 1
            else:
                streak = 0
                outcomes["different"] += 1
        results[name] = {"runs": n, **outcomes}
    print(json.dumps(results))
    """
)


def test_one_failing_allocation_at_a_time_leaves_the_model_as_it_was():
    tests = str(__import__("pathlib").Path(__file__).parent)
    child = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", SCRIPT, tests], capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr[-3000:]
    results = json.loads(child.stdout.strip().splitlines()[-1])
    for name, outcome in results.items():
        assert outcome["runs"] < 20000, name  # 300 clean runs in a row were reached
        assert outcome.get("stale claim", 0) == 0, (name, outcome)
        assert outcome.get("different", 0) == 0, (name, outcome)
        assert outcome["MemoryError"] > 0, (name, outcome)
    # the report comparison is the engine's alone (no torch call in it): nothing but MemoryError
    assert not any(key.startswith("other") for key in results["compare_reports"]), results["compare_reports"]
