"""Repeated-call leak loops (DESIGN 5): live Python objects, references and RSS must not grow."""

from __future__ import annotations

import gc
import os
import weakref

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from torchscan import (
    IncompleteAnalysisError,
    ModuleHandler,
    compare_reports,
    crawl_module,
    estimate_memory,
    measure_flops,
)

from conftest import UnsupportedLeaf

ITERATIONS = 300
OBJECT_BOUND = 100  # live gc-tracked objects allowed to appear over ITERATIONS calls
RSS_BOUND = 20 * 1024 * 1024


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _live_objects() -> int:
    gc.collect()
    gc.collect()
    return len(gc.get_objects())


def _growth(call, iterations: int) -> tuple[int, int]:
    for _ in range(20):  # warm-up: caches, lazily imported modules, interned strings
        call()
    objects, rss = _live_objects(), _rss()
    for _ in range(iterations):
        call()
    return _live_objects() - objects, _rss() - rss


def _check_no_growth(call, iterations: int = ITERATIONS, baseline=None) -> None:
    """`baseline`: the same work without TorchScan, for what PyTorch itself keeps."""
    base_objects, base_rss = _growth(baseline, iterations) if baseline is not None else (0, 0)
    grown_objects, grown_rss = _growth(call, iterations)
    grown_objects -= base_objects
    grown_rss -= max(base_rss, 0)
    assert grown_objects < OBJECT_BOUND, f"{grown_objects} live objects appeared over {iterations} calls"
    assert grown_rss < RSS_BOUND, f"RSS grew by {grown_rss / 2**20:.1f} MiB over {iterations} calls"


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU()
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 3))

    def forward(self, x, *, scale=1.0):
        return self.head(self.act(self.bn(self.conv(x)))) * scale


class Failing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.lin(x)
        raise ValueError("fails every time")


def test_crawl_module_does_not_leak():
    model = Small()
    x = torch.rand(1, 3, 6, 6)
    _check_no_growth(lambda: crawl_module(model, args=(x,), kwargs={"scale": 2.0}))


def test_crawl_module_generated_and_structure_do_not_leak():
    model = Small()
    _check_no_growth(lambda: (crawl_module(model, (3, 6, 6)), crawl_module(model, (3, 6, 6), mode="structure")))


class Abort(BaseException):
    """Not an Exception: the engine lets it through a module handler or an operator formula (an Exception there
    becomes a diagnostic), so the crawl fails where C called the callback. Not KeyboardInterrupt, so that a real
    Ctrl-C is never swallowed by the loop."""


def _raises(expected: type[BaseException], crawl) -> None:
    try:
        crawl()
    except expected:
        return
    raise AssertionError(f"{expected.__name__} was not raised")


def test_failing_crawls_do_not_leak():
    failing = Failing()
    partial = nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf())

    def abort(*args, **kwargs):
        raise Abort

    handler = {nn.Linear: ModuleHandler(abort)}  # called by C from the Linear's call hook, after it ran
    formula = {torch.ops.aten.addmm: abort}  # called by C from the dispatch counter, inside the Linear

    def call():
        # every crawl fails after the engine installed its hooks and its counter and recorded calls
        _raises(ValueError, lambda: crawl_module(failing, (4,)))  # the forward, after self.lin ran
        _raises(IncompleteAnalysisError, lambda: crawl_module(partial, (4,), strict=True))
        _raises(Abort, lambda: crawl_module(partial, (4,), custom_modules=handler))
        _raises(Abort, lambda: crawl_module(partial, (4,), custom_mapping=formula))

    _check_no_growth(call)


def test_measure_flops_does_not_leak():
    x, w = torch.rand(8, 8), torch.rand(8, 8)
    lin = nn.Linear(8, 8)

    def raising(*args, **kwargs):
        raise RuntimeError("formula fails")

    def call():
        with torch.no_grad():
            measure_flops(lambda: (x @ w, lin(x).relu().sum(), x.view(64)))
            measure_flops(lambda: x @ w, custom_mapping={torch.ops.aten.mm: lambda *a, **k: 3})
            measure_flops(lambda: x @ w, custom_mapping={torch.ops.aten.mm: raising})
        try:
            measure_flops(lambda: (_ for _ in ()).throw(KeyError("workload")))
        except KeyError:
            pass

    _check_no_growth(call)


def test_estimate_memory_does_not_leak():
    model = Small()
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    x = torch.rand(2, 3, 6, 6)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()

    def call():
        estimate_memory(step, modules=model, timeline=True)
        estimate_memory(lambda: x * 2, attention="fused")
        try:
            estimate_memory(lambda: (x + 1, (_ for _ in ()).throw(KeyError("workload"))))
        except KeyError:
            pass

    _check_no_growth(call)


def test_estimate_memory_releases_workload_and_tensors():
    holder = [torch.rand(4, 4)]

    def workload():
        return holder[0] @ holder[0]

    refs = [weakref.ref(holder[0]), weakref.ref(workload)]
    estimate_memory(workload)
    holder.clear()
    del workload
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_higher_order_operators_do_not_leak():
    from torch._higher_order_ops.while_loop import while_loop

    x, w = torch.rand(4, 8), torch.rand(8, 8)
    lin = nn.Linear(8, 8)

    class PassThrough(TorchDispatchMode):
        supports_higher_order_operators = True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def workloads(run):
        with torch.no_grad():
            # a counted branch, a branch that raises, an uncounted loop
            run(lambda: torch.cond(x.sum() > 0, lambda x: x @ w, lambda x: x.clone(), (x,)))
            try:
                run(lambda: torch.cond(x.sum() > 0, lambda x: x[99], lambda x: x, (x,)))
            except IndexError:
                pass
            run(lambda: while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, lin(y)), (torch.tensor(0), x)))

    def under_a_plain_mode(workload):
        with PassThrough():
            workload()

    # Each eager torch.cond / while_loop call keeps a torch.compile wrapper in PyTorch (2 objects).
    _check_no_growth(
        lambda: workloads(lambda w: measure_flops(w, modules=lin)), baseline=lambda: workloads(under_a_plain_mode)
    )


def test_compare_reports_does_not_leak():
    before = crawl_module(nn.Conv2d(3, 8, 3), (3, 16, 16))
    after = crawl_module(nn.Sequential(nn.Conv2d(3, 12, 3), nn.ReLU()), (3, 16, 16))
    broken = dict(after, schema_version=2)

    def call():
        compare_reports(before, after)
        compare_reports(after, before)
        try:
            compare_reports(before, broken)
        except ValueError:
            pass

    _check_no_growth(call)


def test_compare_reports_refusals_and_the_020_functions_do_not_leak():
    import copy
    import warnings

    from torchscan import modules, utils

    report = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), (3, 16, 16))
    hostile = copy.deepcopy(report)
    hostile["layers"][1]["metrics"]["macs"]["status"] = "weird"  # refused deep inside the C check
    huge = copy.deepcopy(report)
    huge["totals"]["parameters"]["value"] = 2**64  # refused while converting to JSON
    conv, relu, odd = nn.Conv2d(3, 8, 3), nn.ReLU(), UnsupportedLeaf()
    x = torch.rand(1, 3, 8, 8)
    y, z = conv(x), odd(x)

    def call():
        for bad in (hostile, huge):
            try:
                compare_reports(report, bad)
            except ValueError:
                pass
        modules.module_flops(conv, (x,), y)
        modules.module_macs(relu, y, y)
        modules.module_dmas(conv, x, y)
        modules.module_rf(conv, x, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert modules.module_flops(odd, (x,), z) == 0  # no formula: warns and returns 0
        assert caught
        utils.format_info(report)
        utils.format_report(report, max_depth=1)
        try:
            utils.format_report(hostile)
        except ValueError:
            pass
        utils.aggregate_info(report, 0)
        utils.format_line_str(report["layers"][1], [10] * 8, "end", True, True)
        utils.format_name("a\ud800", 3)
        utils.wrap_string("features.block.conv", 12, mode="mid")
        utils.format_s("abc", 5, 2)
        utils.unit_scale(2.5e6)
        try:
            utils.wrap_string("features.block.conv", 5, mode="bad")
        except ValueError:
            pass

    _check_no_growth(call)


def test_crawl_releases_model_inputs_and_activations():
    activations = []

    class Keeper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, *, extra):
            out = self.lin(x)
            activations.append(weakref.ref(out))
            return out

    model = Keeper()
    x = torch.rand(2, 4)
    extra = torch.rand(3)
    report = crawl_module(model, args=(x,), kwargs={"extra": extra})
    refs = [weakref.ref(model), weakref.ref(x), weakref.ref(extra), weakref.ref(model.lin.weight)]
    del model, x, extra
    gc.collect()
    assert all(ref() is None for ref in refs), "the crawl kept a model, input or parameter alive"
    assert all(ref() is None for ref in activations), "the crawl kept an activation alive"
    assert report["layers"][1]["output"]["shape"] == [2, 4]  # the report alone survives


def test_failed_crawl_releases_the_exception_graph():
    model = Failing()
    x = torch.rand(1, 4)
    refs = [weakref.ref(model), weakref.ref(x)]
    with pytest.raises(ValueError):
        crawl_module(model, args=(x,))
    del model, x
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_measure_flops_releases_workload_and_tensors():
    holder = [torch.rand(4, 4)]

    def workload():
        return holder[0] @ holder[0]

    refs = [weakref.ref(holder[0]), weakref.ref(workload)]
    measure_flops(workload, custom_mapping={torch.ops.aten.mm: lambda *a, **k: 1})
    holder.clear()
    del workload
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_reference_counts_of_caller_objects_are_unchanged():
    import sys

    model = Small()
    x = torch.rand(1, 3, 6, 6)
    scale = 2.5
    kwargs = {"scale": scale}

    def formula(*args, **kw):
        return 1

    mapping = {torch.ops.aten.addmm: formula}
    watched = [model, x, scale, kwargs, formula, mapping, *model.parameters(), *model.buffers(), *model.modules()]
    crawl_module(model, args=(x,), kwargs=kwargs, custom_mapping=mapping)  # warm-up (signature caches)
    gc.collect()
    before = [sys.getrefcount(obj) for obj in watched]
    for _ in range(10):
        crawl_module(model, args=(x,), kwargs=kwargs, custom_mapping=mapping)
        measure_flops(lambda: model(x), custom_mapping=mapping)
    gc.collect()
    after = [sys.getrefcount(obj) for obj in watched]
    assert after == before


def test_the_peak_memory_reduction_does_not_leak():
    # the C walk over the profiler's event tree, repeated on one recorded run
    from torch.profiler import ProfilerActivity, profile

    from torchscan import _engine

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        a = torch.ones(1000)
        b = torch.ones(500)
        del a, b
    roots = prof.profiler.kineto_results.experimental_event_tree()
    tag = torch._C._profiler._EventType.Allocation
    assert _engine.memory_peak(roots, tag) == 6000  # both alive together
    _check_no_growth(lambda: _engine.memory_peak(roots, tag), iterations=1000)


def test_progress_lines_do_not_leak():
    import pty

    from torchscan import _engine

    controller, terminal = pty.openpty()

    def call():
        handle = _engine.progress_start("leak check", terminal)  # a thread started and joined each time
        assert handle is not None
        _engine.progress_stop(handle)
        del handle
        _engine.time_workload(lambda: None, None, 0, 1e-4, 2, 1.0, "calls", progress_fd=terminal)

    try:
        _check_no_growth(call)
    finally:
        os.close(terminal)
        os.close(controller)


def test_gather_engine_functions_do_not_leak():
    """gather_reports' C parts (the shape each rank posts, the check of every rank's post, the GatheredReport),
    also on their error paths."""
    import json

    from torchscan import _engine

    report = crawl_module(Small(), args=(torch.rand(1, 3, 6, 6),))
    other = crawl_module(nn.Sequential(nn.Linear(4, 4)), args=(torch.rand(2, 4),))
    good = json.dumps({"dst": 0, "ok": _engine.gather_shape(report)}).encode()
    bad = json.dumps({"dst": 0, "ok": _engine.gather_shape(other)}).encode()

    def calls() -> None:
        _engine.gather_shape(report)
        with pytest.raises(ValueError):
            _engine.gather_shape({"not": "a report"})
        assert _engine.gather_check([good, good], [0, 1]) is None
        assert _engine.gather_check([good, bad, b"{"], [0, 1, 2])[0] == "RuntimeError"
        assert _engine.gather_check([good, bad], [0, 1])[0] == "ValueError"
        _engine.gather_reports([report, report], [0, 1])

    _check_no_growth(calls, iterations=100)
