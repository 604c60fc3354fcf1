"""Calls from several Python threads: each returns the report of a call made alone, or is refused with a clear
error; never a mixed report, and nothing is left on the model (hooks, wrappers, training flags)."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from conftest import assert_nothing_left, training_flags
from torch import nn

from torchscan import crawl_module, measure_flops

REFUSED = "module is already observed by another TorchScan call"


def _model(width: int = 8) -> nn.Module:
    # BatchNorm in training mode: a crawl evaluates the model, so a second crawl that saved the flags of the first
    # would leave the model in eval mode
    return nn.Sequential(nn.Conv2d(3, width, 3), nn.BatchNorm2d(width), nn.ReLU(), nn.Conv2d(width, 4, 3)).train()


def _run_threads(target, count: int) -> list:
    barrier = threading.Barrier(count)
    outcomes: list = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        outcomes[i] = target(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def _calls(call, expected, repeats: int):
    """Runs call() `repeats` times: (equal, refused, other outcomes)."""
    equal, refused, other = 0, 0, []
    for _ in range(repeats):
        try:
            result = call()
        except RuntimeError as error:
            if REFUSED in str(error) and "copy.deepcopy" in str(error):
                refused += 1
                continue
            other.append(repr(error))
            continue
        if result == expected:
            equal += 1
        else:
            other.append("a report that differs from the single-threaded one")
    return equal, refused, other


def test_eight_threads_on_distinct_models_run_independently():
    torch.manual_seed(0)
    models = [_model(4 + i) for i in range(8)]
    inputs = [torch.rand(2, 3, 12, 12) for _ in models]
    expected = [crawl_module(m, args=(x,)) for m, x in zip(models, inputs)]
    flags = [training_flags(m) for m in models]
    outcomes = _run_threads(lambda i: _calls(lambda: crawl_module(models[i], args=(inputs[i],)), expected[i], 200), 8)
    assert outcomes == [(200, 0, [])] * 8
    for model, before in zip(models, flags):
        assert_nothing_left(model)
        assert training_flags(model) == before


def test_eight_threads_on_one_model_are_refused_or_exact():
    torch.manual_seed(0)
    model = _model()
    x = torch.rand(2, 3, 12, 12)
    expected = crawl_module(model, args=(x,))
    before = training_flags(model)
    outcomes = _run_threads(lambda i: _calls(lambda: crawl_module(model, args=(x,)), expected, 200), 8)
    assert all(other == [] for _, _, other in outcomes), outcomes
    assert sum(equal + refused for equal, refused, _ in outcomes) == 8 * 200
    assert sum(equal for equal, _, _ in outcomes) > 0
    assert_nothing_left(model)
    assert training_flags(model) == before


def test_models_that_share_a_submodule_are_refused_by_its_path():
    shared = nn.Linear(4, 4)
    inner = nn.Sequential(nn.ReLU(), shared)
    entered, release = threading.Event(), threading.Event()

    class Gate(nn.Module):
        def forward(self, x):
            entered.set()
            release.wait(30)
            return x

    first = nn.Sequential(shared, Gate())
    errors: list = []
    thread = threading.Thread(target=lambda: crawl_module(first, (4,)))
    thread.start()
    try:
        assert entered.wait(30)
        with pytest.raises(RuntimeError, match=r"in thread \d+, at its submodule '1'\)") as error:
            crawl_module(inner, (4,))
        errors.append(str(error.value))
        with pytest.raises(RuntimeError, match=REFUSED):
            measure_flops(lambda: inner(torch.ones(1, 4)), modules=inner)
    finally:
        release.set()
        thread.join(30)
    assert not thread.is_alive()
    # the first crawl has ended: the second model can be crawled now
    assert crawl_module(inner, (4,))["totals"]["parameters"]["value"] == 20
    assert_nothing_left(first)
    assert_nothing_left(inner)


def test_another_threads_plain_calls_are_not_part_of_the_crawl():
    entered, release = threading.Event(), threading.Event()

    class Gate(nn.Module):
        block = False

        def forward(self, x):
            if self.block and threading.current_thread() is threading.main_thread():
                entered.set()
                release.wait(30)
            return x

    model = nn.Sequential(nn.Linear(4, 4), Gate(), nn.Linear(4, 2))
    x = torch.ones(1, 4)
    expected = crawl_module(model, args=(x,))
    model[1].block = True
    outputs: list = []

    def call_plainly() -> None:
        entered.wait(30)
        for _ in range(3):
            outputs.append(model(x))  # hooks of the crawl are on the model meanwhile
        release.set()

    thread = threading.Thread(target=call_plainly)
    thread.start()
    report = crawl_module(model, args=(x,))
    thread.join(30)
    assert len(outputs) == 3
    assert report == expected  # the other thread's three calls are not in it
    assert_nothing_left(model)


def test_a_crawl_inside_a_crawl_of_the_same_model_is_refused():
    seen: list = []

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            if not seen:
                with pytest.raises(RuntimeError, match=r"\(in this thread\): calls on one model") as error:
                    crawl_module(self, (4,))
                seen.append(str(error.value))
            return self.linear(x)

    model = Nested().train()
    report = crawl_module(model, (4,))
    assert len(seen) == 1
    assert report["totals"]["parameters"]["value"] == 20
    assert_nothing_left(model)
    assert model.training


def test_a_deep_copy_per_thread_is_the_documented_way():
    torch.manual_seed(0)
    model = _model()
    x = torch.rand(2, 3, 12, 12)
    expected = crawl_module(model, args=(x,))
    copies = [copy.deepcopy(model) for _ in range(4)]
    outcomes = _run_threads(lambda i: _calls(lambda: crawl_module(copies[i], args=(x,)), expected, 50), 4)
    assert outcomes == [(50, 0, [])] * 4
