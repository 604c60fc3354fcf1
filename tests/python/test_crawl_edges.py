"""crawl.c: building a crawl's module table on unusual trees (extb).

Library blocks (a class whose ``__module__`` is a matched library, or that name and a dot) have their operators
matched; a class of a module that merely starts with the name is not the library's. Models with more distinct
types than the per-crawl type memo holds, a garbage collection in the middle of the forward, a module name
that UTF-8 cannot encode, and an nn.Transformer root with handlers for other types are crawled as the
contract says. Counts: docs/module-formulas.md (ReLU N FLOPs; Linear 2·B·in·out).
"""

from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

from conftest import assert_nothing_left
from torchscan import ModuleHandler, crawl_module


def _doubling(module_name):
    """A module class that doubles its input, as if defined in `module_name`."""
    return type("Doubling", (nn.Module,), {"forward": lambda self, x: x * 2, "__module__": module_name})


def _metrics(report, path=""):
    return next(layer for layer in report["layers"] if layer["path"] == path)["metrics"]


@pytest.mark.parametrize(
    "module_name,matched",
    [("torch.ao.quantization", True), ("torch.ao.quantization.extra", True), ("torch.ao.quantizationx", False)],
)
def test_a_library_class_is_matched_by_its_operators(module_name, matched):
    import torch.ao.quantization  # noqa: F401 - the library is imported: its classes are looked for

    report = crawl_module(_doubling(module_name)(), args=(torch.ones(2, 3),))
    flops = _metrics(report)["module_flops"]
    if matched:
        # x * 2 on 6 elements: one pointwise operation each, matched by signature
        assert (flops["status"], flops["value"]) == ("complete", 6)
        assert flops["method"] == "torchscan_module_formula:signature_pointwise"
    else:
        assert flops["status"] == "partial"
        assert {d["code"] for d in report["diagnostics"] if d.get("metric") == "module_flops"} == {
            "unsupported_module_metric"
        }


def test_a_class_whose_module_is_not_a_string_is_no_librarys():
    report = crawl_module(_doubling(5)(), args=(torch.ones(2, 3),))
    assert _metrics(report)["module_flops"]["status"] == "partial"


def test_more_distinct_types_than_the_type_memo():
    # 70 distinct ReLU subclasses (the memo holds 64 types): each still reads as ReLU, N = 8 FLOPs each
    layers = [type(f"ReLU{i}", (nn.ReLU,), {})() for i in range(70)]
    report = crawl_module(nn.Sequential(*layers), args=(torch.ones(2, 4),))
    assert report["totals"]["module_flops"]["value"] == 70 * 8
    assert report["totals"]["module_flops"]["status"] == "complete"


class _Collecting(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        gc.collect()  # the crawl's objects are traversed while it is installed
        return self.linear(x)


def test_a_garbage_collection_during_the_forward():
    model = _Collecting()
    report = crawl_module(model, args=(torch.ones(2, 4),))
    # Linear(4, 3) on (2, 4): 2*2*4*3 = 48 FLOPs
    assert _metrics(report, "linear")["module_flops"]["value"] == 48
    assert report["totals"]["parameters"]["value"] == 15
    assert_nothing_left(model)


def test_a_module_name_that_utf8_cannot_encode():
    model = nn.Sequential()
    model.add_module("\udc80", nn.ReLU())
    with pytest.raises(UnicodeEncodeError):
        crawl_module(model, args=(torch.ones(2, 4),))
    assert_nothing_left(model)


def test_a_transformer_root_with_handlers_for_other_types_stays_atomic():
    torch.manual_seed(0)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
    src, tgt = torch.rand(3, 1, 4), torch.rand(2, 1, 4)
    handlers = {nn.Conv2d: ModuleHandler(lambda call: {})}
    report = crawl_module(model, args=(src, tgt), custom_modules=handlers)
    # one atomic row with the pinned 2694 FLOPs (test_module_families)
    assert [layer["path"] for layer in report["layers"]] == [""]
    assert _metrics(report)["module_flops"]["value"] == 2694


def test_crawl_object_argument_checks():
    from torchscan import _engine

    crawl = _engine.Crawl(nn.ReLU())
    with pytest.raises(TypeError, match=r"install\(\) takes at least 1 argument \(0 given\)"):
        crawl.install()
    with pytest.raises(TypeError, match=r"install\(\) takes at most 2 arguments \(3 given\)"):
        crawl.install(None, True, 2)
    with pytest.raises(TypeError, match=r"Crawl\(\) missing required argument 'module' \(pos 1\)"):
        _engine.Crawl()


class _LibraryBlock(nn.Module):
    __module__ = "torch.ao.quantization.extra"

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * 2


def test_a_callers_handler_on_library_classes():
    import torch.ao.quantization  # noqa: F401

    leaf = _doubling("torch.ao.quantization.extra")
    five = ModuleHandler(lambda call: {"module_flops": 5})
    handlers = {leaf: five, _LibraryBlock: five}
    # a leaf: the handler's answer wins; what it omits (MACs) the signature answers (x * 2: none)
    report = crawl_module(leaf(), args=(torch.ones(2, 3),), custom_modules=handlers)
    metrics = _metrics(report)
    assert (metrics["module_flops"]["value"], metrics["module_flops"]["method"].split(":")[0]) == (
        5,
        "custom_module_handler",
    )
    assert (metrics["macs"]["value"], metrics["macs"]["method"]) == (0, "torchscan_module_formula:signature_pointwise")
    # a composite: the handler's 5 for its own work, the rest from its children: Linear(3, 3) on (2, 3) is
    # 2*2*3*3 = 36 FLOPs, 18 MACs; 41 FLOPs in all
    report = crawl_module(_LibraryBlock(), args=(torch.ones(2, 3),), custom_modules=handlers)
    assert "macs" not in _metrics(report)
    assert (_metrics(report, "lin")["module_flops"]["value"], _metrics(report, "lin")["macs"]["value"]) == (36, 18)
    assert (report["totals"]["module_flops"]["value"], report["totals"]["macs"]["value"]) == (41, 18)
