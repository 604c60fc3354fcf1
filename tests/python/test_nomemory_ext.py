"""Python allocation failures in every other entry point of the extension (test_nomemory.py covers crawl_module,
measure_flops and compare_reports): one failing allocation at a time, N = 1, 2, ... (``_testcapi.set_nomemory``).

Each call either returns what the same call returns without a failure or raises; a call that runs no torch code
raises MemoryError and nothing else (an engine status turned into an exception of another type, a SystemError from
a NULL returned without an exception, or a corrupted cache that changes the next result fails the test). Calls that
run torch code may also meet torch's own translations (RuntimeError from its argument parser, SystemError from its
C++ wrappers): they are counted apart and must leave the model as it was. The loop ends after a streak of runs that
all succeed; it runs in a child process, so that a crash fails the test instead of ending pytest.

The engine's own allocations (malloc, jansson) are not Python's and are not failed here: tests/c/test_alloc_failures
injects those. What stays out of reach of this loop: jansson's allocator (json_set_alloc_funcs is process-wide, and
the engine frees jansson's texts with free(), so it stays malloc), and pthread/ioctl failures in progress.c.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_testcapi = pytest.importorskip("_testcapi")

SETUP = textwrap.dedent(
    """
    import collections, importlib.util, io, json, os, sys, tempfile, _testcapi, torch
    from torch import nn
    sys.path.insert(0, sys.argv[1])
    from conftest import assert_nothing_left, training_flags
    import torchscan
    from torchscan import _engine, utils

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 2)).train()
    x = torch.rand(1, 3, 8, 8)
    report = torchscan.crawl_module(model, args=(x,))
    small = torchscan.crawl_module(nn.Sequential(nn.Conv2d(3, 2, 3)), (3, 8, 8))
    flops = torchscan.measure_flops(lambda: model(x))
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "model.pt")
    torch.save(model.state_dict(), path)
    checkpoint = torchscan.inspect_checkpoint(path)
    timing = _engine.time_workload(lambda: None, None, 0, 1e-4, 2, 2.0, "sample")
    measured = dict(timing["totals"])
    bench = torchscan.measure_latency(lambda: model(x), device="cpu", inputs=(x,), warmup=1, min_run_time=0.001)
    mha = nn.MultiheadAttention(4, 2)
    seq = torch.rand(3, 1, 4)
    causal = torch.full((3, 3), float("-inf")).triu(1)
    lstm = nn.LSTM(4, 3)
    status = json.dumps({"dst": 0, "ok": _engine.gather_shape(report)}).encode()
    Event = collections.namedtuple(
        "Event", "key input_shapes count self_cpu_memory_usage self_cpu_time_total self_device_time_total")
    events = [Event("aten::mm", [[2, 3], [3, 4]], 3, 96, 12.5, None), Event("aten::add", None, 1, -8, 30.0, 4.0)]
    """
)

LOOP = textwrap.dedent(
    """
    def run(calls, streak_needed, limit, check_model=None):
        results = {}
        for name, call in calls.items():
            expected = call()
            outcomes = collections.Counter()
            streak = n = 0
            while streak < streak_needed and n < limit:
                n += 1
                result = None
                _testcapi.set_nomemory(n, n + 1)
                try:
                    result = call()
                except MemoryError:
                    outcomes["MemoryError"] += 1
                except Exception as error:
                    outcomes["other " + type(error).__name__] += 1
                finally:
                    _testcapi.remove_mem_hooks()
                if check_model is not None:
                    check_model()
                if result is None:
                    streak = 0
                elif result == expected:
                    streak += 1
                    outcomes["same"] += 1
                else:
                    streak = 0
                    outcomes["different"] += 1
                    outcomes["first different"] = outcomes["first different"] or n
            results[name] = {"runs": n, **outcomes}
        print(json.dumps(results))
    """
)

ENGINE_CALLS = textwrap.dedent(
    """
    calls = {
        "format_summary": lambda: _engine.format_summary(report, "mid", True, True, 1),
        "format_report": lambda: _engine.format_report(report),
        "render_report": lambda: torchscan.render_report(report, before=small, title="t"),
        "render_report svg": lambda: torchscan.render_report(report, format="svg"),
        "render_benchmark": lambda: torchscan.render_report(bench),
        "format_name": lambda: _engine.format_name("block.conv", 2),
        "wrap_string": lambda: _engine.wrap_string("a.b.c.d.e.f", 5, ".", "[...]", "mid"),
        "format_s": lambda: _engine.format_s("text", 8, 10),
        "unit_scale": lambda: _engine.unit_scale(123456789),
        "format_line": lambda: _engine.format_line(report["layers"][1], (20, 10, 10, 10, 10, 10, 10, 10), "end", True, True),
        "limit_depth": lambda: _engine.limit_depth(report, 0),
        "incomplete": lambda: _engine.incomplete(report),
        "diff_metrics": lambda: _engine.diff_metrics(report["totals"], small["totals"]),
        "describe_call": lambda: _engine.describe_call((x, [x, (None, 1.5)], {"k": x}), {"mask": None}),
        "gather_shape": lambda: _engine.gather_shape(report),
        "gather_check": lambda: _engine.gather_check([status, status, b"{"], [0, 1, 2]),
        "gather_reports": lambda: _engine.gather_reports([report, report], [0, 1]),
        "format_checkpoint": lambda: torchscan.format_checkpoint(checkpoint, max_depth=1),
        "match_checkpoint": lambda: torchscan.match_checkpoint(checkpoint, report),
        "inspect_checkpoint": lambda: torchscan.inspect_checkpoint(path),
        "workload_totals": lambda: _engine.workload_totals(measured, _engine.WORKLOAD_LATENCY | _engine.WORKLOAD_THROUGHPUT,
                                                           "sample", "process", "tracked"),
        "workload_achieved": lambda: _engine.workload_achieved(
            _engine.workload_totals(measured, _engine.WORKLOAD_LATENCY, "sample"), 1e9),
        "compare_benchmarks": lambda: torchscan.compare_benchmarks(bench, bench, check=lambda: None),
        "rss_parse": lambda: _engine.rss_parse("exited 0 1048576"),
        "profile_rows": lambda: _engine.profile_rows(events, False, 5),
    }
    """
)


def _child(script: str) -> dict:
    tests = str(Path(__file__).parent)
    child = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", script, tests], capture_output=True, text=True, timeout=900
    )
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


def test_engine_functions_raise_memoryerror_and_stay_correct():
    results = _child(SETUP + LOOP + ENGINE_CALLS + "run(calls, 100, 20000)\n")
    for name, outcome in results.items():
        assert outcome["runs"] < 20000, (name, outcome)  # a streak of clean runs was reached
        assert outcome.get("different", 0) == 0, (name, outcome)
        # unit_scale allocates nothing (a float and a tuple from CPython's free lists)
        assert outcome.get("MemoryError", 0) > 0 or name == "unit_scale", (name, outcome)
        others = {key: n for key, n in outcome.items() if key.startswith("other")}
        # inspect_checkpoint opens a file: a failed allocation inside io may read as OSError
        assert not others or (name == "inspect_checkpoint" and set(others) <= {"other OSError"}), (name, outcome)



MODULE_INIT = textwrap.dedent(
    """
    spec = importlib.util.find_spec("torchscan._engine")

    def fresh_engine():
        module = importlib.util.module_from_spec(spec)  # multi-phase init: a new module object each time
        spec.loader.exec_module(module)  # the module state: torch's types, interned names, its three types
        return sorted(name for name in vars(module) if not name.startswith("__"))

    calls = {"module init": fresh_engine}
    """
)


def test_module_init_raises_memoryerror():
    """engine_exec made its three types in a row and checked them together: a MemoryError of the first was cleared
    by the second's success, and the import failed with SystemError ('failed without setting an exception')."""
    [outcome] = _child(SETUP + LOOP + MODULE_INIT + "run(calls, 300, 20000)\n").values()
    assert outcome["runs"] < 20000, outcome
    assert outcome.get("different", 0) == 0, outcome
    assert outcome["MemoryError"] > 0, outcome
    assert not [key for key in outcome if key.startswith("other")], outcome


CRAWLS = textwrap.dedent(
    """
    padding = torch.tensor([[False, False, True]])

    class Doubled(nn.Module):
        def forward(self, t):
            return t * 2

    custom = nn.Sequential(nn.Linear(4, 4), Doubled())
    # computed once: under the loop, PyTorch's own forward may take another path (its weights output then differs)
    mha_output = mha(seq, seq, seq)
    handler = torchscan.ModuleHandler(lambda call: {"module_flops": 8})
    models = [mha, lstm, custom]
    flags = [training_flags(m) for m in models]

    def check_models():
        for m, f in zip(models, flags):
            assert_nothing_left(m)
            assert training_flags(m) == f

    calls = {
        "crawl mha with masks": lambda: torchscan.crawl_module(
            mha, args=(seq, seq, seq), kwargs={"attn_mask": causal, "key_padding_mask": padding}),
        "crawl lstm": lambda: torchscan.crawl_module(lstm, args=(seq,)),
        "crawl with a handler": lambda: torchscan.crawl_module(
            custom, args=(torch.ones(2, 4),), custom_modules={Doubled: handler}),
        "module_estimates": lambda: _engine.module_estimates(mha, (seq, seq, seq), {"attn_mask": causal}, mha_output),
    }
    """
)


def test_crawls_of_more_families_raise_and_leave_nothing():
    """Attention with masks (their values are read), an LSTM, a caller's handler, and the module formulas outside a
    crawl. A crawl of nn.TransformerEncoderLayer is left out: under this loop PyTorch's own conversion of an aten
    call's arguments for a Python dispatch mode (parseIValuesToPyArgsKwargs, before TorchScan's counter runs)
    crashes on a failed allocation."""
    results = _child(SETUP + LOOP + CRAWLS + "run(calls, 300, 40000, check_models)\n")
    for name, outcome in results.items():
        assert outcome["runs"] < 40000, (name, outcome)
        assert outcome.get("different", 0) == 0, (name, outcome)
        assert outcome.get("MemoryError", 0) > 0, (name, outcome)
        # torch's own translations: RuntimeError (argument parser), SystemError (C++ wrappers returning a result
        # with an error set), torch.OutOfMemoryError (a C++ bad_alloc)
        others = {key for key in outcome if key.startswith("other")}
        assert others <= {"other RuntimeError", "other SystemError", "other OutOfMemoryError"}, (name, outcome)


JSON_LOOP = LOOP.replace("_testcapi.set_nomemory(n, n + 1)", "_engine._json_nomemory(n)").replace(
    "_testcapi.remove_mem_hooks()", "_engine._json_nomemory(0)"
)


def test_failed_json_allocations_raise_memoryerror_and_stay_correct():
    """The same entry points with the n-th allocation of jansson failing (the engine's JSON values: arguments
    converted to JSON, engine results, reports; _engine._json_nomemory routes them through a malloc that fails
    once). Every run raises MemoryError or returns the result of a run without failure. gather_check is left out:
    jansson 2.14's own parser (json_loadb) aborts on a failed allocation (an assert in lex_scan_string)."""
    results = _child(SETUP + JSON_LOOP + ENGINE_CALLS + 'del calls["gather_check"]\nrun(calls, 50, 20000)\n')
    failed = 0
    for name, outcome in results.items():
        assert outcome["runs"] < 20000, (name, outcome)
        # limit_depth (jansson's json_copy dropped a member it failed to insert) and render_report (a title whose
        # copy failed read as invalid UTF-8) were wrong here once
        assert not [key for key in outcome if key == "different" or key.startswith("other")], (name, outcome)
        failed += outcome.get("MemoryError", 0)
    assert results["format_summary"]["MemoryError"] > 0 and results["describe_call"]["MemoryError"] > 0
    assert results["describe_call"].get("different", 0) == 0
    assert failed > 10000, results


def test_failed_json_allocations_in_crawls_leave_nothing():
    """The crawls of the Python loop above with the n-th jansson allocation failing instead (the session's records,
    the report's emission): MemoryError or the same report, and the models as they were."""
    results = _child(SETUP + JSON_LOOP + CRAWLS + "run(calls, 50, 40000, check_models)\n")
    for name, outcome in results.items():
        assert outcome["runs"] < 40000, (name, outcome)
        assert outcome.get("MemoryError", 0) > 0, (name, outcome)
        assert not [key for key in outcome if key == "different" or key.startswith("other")], (name, outcome)


MORE_FAMILIES = textwrap.dedent(
    """
    encoder = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0).eval()
    transformer = nn.Transformer(4, 2, 1, 1, dim_feedforward=8, dropout=0.0).eval()
    gru = nn.GRU(4, 3, batch_first=True)
    bag = nn.EmbeddingBag(10, 3)
    models += [encoder, transformer, gru, bag, model]
    flags = [training_flags(m) for m in models]
    calls = {
        "crawl encoder layer": lambda: torchscan.crawl_module(encoder, args=(seq,), kwargs={"src_mask": causal}),
        "crawl transformer": lambda: torchscan.crawl_module(transformer, args=(seq, seq), kwargs={"tgt_mask": causal}),
        "crawl gru": lambda: torchscan.crawl_module(gru, args=(torch.rand(1, 3, 4),)),
        "crawl embedding bag": lambda: torchscan.crawl_module(
            bag, args=(torch.tensor([1, 2, 4]), torch.tensor([0, 2]))),
        "measure_flops": lambda: torchscan.measure_flops(lambda: model(x), modules=model),
        "crawl structure": lambda: torchscan.crawl_module(model, args=(x,), mode="structure"),
    }
    """
)


def test_failed_json_allocations_in_crawls_of_transformers_rnns_and_flops():
    """Families the Python loop cannot take (PyTorch's own argument conversion crashes there under
    set_nomemory), with jansson's allocations failing one at a time: MemoryError or the same report."""
    results = _child(SETUP + JSON_LOOP + CRAWLS + MORE_FAMILIES + "run(calls, 50, 40000, check_models)\n")
    for name, outcome in results.items():
        assert outcome["runs"] < 40000, (name, outcome)
        assert outcome.get("MemoryError", 0) > 0, (name, outcome)
        assert not [key for key in outcome if key == "different" or key.startswith("other")], (name, outcome)
