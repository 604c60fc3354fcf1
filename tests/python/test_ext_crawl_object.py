"""The Crawl type of the extension used directly (crawl.c): its argument checks, its install/uninstall pairing, the
deepest module tree it walks, and its report's argument checks. crawl_module and measure_flops use it correctly; these
are the refusals behind them, each leaving the model untouched."""

from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

from torchscan import _engine

from conftest import assert_nothing_left


def _model():
    return nn.Sequential(nn.Linear(4, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 2))).train()


def test_constructor_checks():
    model = _model()
    with pytest.raises(TypeError, match="handlers must be a dict, with module_call"):
        _engine.Crawl(model, True, [], object)
    with pytest.raises(TypeError, match="handlers must be a dict, with module_call"):
        _engine.Crawl(model, True, {}, None)
    with pytest.raises(TypeError, match="Crawl"):
        _engine.Crawl()
    with pytest.raises(TypeError, match="not a subtype"):
        _engine.Crawl.__new__(type("NotCrawl", (), {}), model)
    assert_nothing_left(model)


def test_depth_of_nested_modules_and_none_children():
    model = _model()
    model.add_module("empty", None)  # None children are skipped
    crawl = _engine.Crawl(model, True)
    assert crawl.depth() == 2
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, nn.Sequential(shared))  # a module reached twice is walked once
    assert _engine.Crawl(twice, True).depth() == 1


def test_a_module_tree_deeper_than_the_walker_allows_is_a_recursion_error():
    leaf = nn.Identity()
    for _ in range(10001):
        parent = nn.Module()
        parent.child = leaf
        leaf = parent
    with pytest.raises(RecursionError, match="module tree is too deep"):
        _engine.Crawl(leaf, True)


def test_install_twice_is_refused_and_uninstall_restores():
    model = _model()
    crawl = _engine.Crawl(model, True)
    crawl.install(None)
    assert not model.training  # evaluation mode while installed
    with pytest.raises(RuntimeError, match="already installed"):
        crawl.install(None)
    crawl.uninstall()
    crawl.uninstall()  # a second uninstall is harmless
    assert model.training and all(m.training for m in model.modules())
    assert_nothing_left(model)
    crawl.install(None, False)  # evaluate=False keeps the training flags
    assert model.training
    crawl.uninstall()
    assert_nothing_left(model)


def test_report_argument_checks():
    model = _model()
    crawl = _engine.Crawl(model, True)
    crawl.install(None)
    model(torch.ones(1, 4))
    crawl.uninstall()
    good = ({}, "provided", (torch.ones(1, 4),), {}, None, torch.__version__)
    report = crawl.report(*good)
    assert [row["path"] for row in report["layers"]] == ["", "0", "1", "1.0", "1.1"]
    with pytest.raises(TypeError, match="counter must be a Counter or None"):
        crawl.report({}, "provided", (torch.ones(1, 4),), {}, object(), torch.__version__)
    with pytest.raises(TypeError, match="report"):
        crawl.report([], "provided", (), {}, None, torch.__version__)
    with pytest.raises(TypeError, match="report"):
        crawl.report({}, "provided", [], {}, None, torch.__version__)
    with pytest.raises(ValueError):
        crawl.report({"bad": object()}, "provided", (), {}, None, torch.__version__)


def test_a_crawl_object_is_collected_with_its_model():
    model = _model()
    crawl = _engine.Crawl(model, True)
    crawl.install(None)
    crawl.uninstall()
    referents = gc.get_referents(crawl)
    assert model in referents  # the crawl holds its root (and reports it to the collector)
    del crawl
    gc.collect()
    assert_nothing_left(model)
