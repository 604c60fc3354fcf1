"""Every public function documents each parameter by name, what it returns and what it raises."""

from __future__ import annotations

import inspect
import typing

import pytest

import torchscan
from torchscan import modules, process, utils


def _public_objects():
    seen = {}
    for owner, names in (
        (torchscan, torchscan.__all__),
        (process, process.__all__),
        (modules, modules.__all__),
        (utils, utils.__all__),
        (torchscan.crawler, torchscan.crawler.__all__),
    ):
        for name in names:
            seen[f"{owner.__name__}.{name}"] = getattr(owner, name)
    return sorted(seen.items())


FUNCTIONS = [(name, obj) for name, obj in _public_objects() if inspect.isfunction(obj)]
# classes a caller constructs (ModuleHandler, ModuleCall, IncompleteAnalysisError): each constructor parameter is
# documented; TypedDicts (report shapes, documented field by field in docs/report-schema.md) need a docstring
CLASSES = [(name, obj) for name, obj in _public_objects() if inspect.isclass(obj)]


def _undocumented(function, doc):
    # by name: an Args entry ("name:" or "name, other: ..."), or ``name`` in the text
    return [
        p
        for p in inspect.signature(function).parameters
        if p != "self" and not any(f in doc for f in (f"{p}:", f"{p},", f"``{p}``"))
    ]


def test_the_walk_finds_the_public_functions():
    names = {name.rsplit(".", 1)[1] for name, _ in FUNCTIONS}
    assert {"crawl_module", "summary", "measure_latency", "measure_workload", "format_s", "module_rf"} <= names
    assert {"measure_peak_memory", "measure_peak_rss", "metric_result", "render_report"} <= names


@pytest.mark.parametrize(("name", "function"), FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
def test_every_parameter_return_and_error_is_documented(name, function):
    doc = inspect.getdoc(function) or ""
    missing = _undocumented(function, doc)
    assert not missing, f"{name}: parameters not documented: {missing}"
    assert "Returns:" in doc, f"{name}: no Returns: section"
    assert "Raises" in doc, f"{name}: no Raises section"


def test_the_walk_finds_the_public_classes():
    names = {name.rsplit(".", 1)[1] for name, _ in CLASSES}
    assert {"ModuleHandler", "ModuleCall", "IncompleteAnalysisError", "AnalysisReport", "MetricResult"} <= names


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[name for name, _ in CLASSES])
def test_every_public_class_documents_its_constructor(name, cls):
    doc = inspect.getdoc(cls) or ""
    assert doc, f"{name}: no docstring"
    if typing.is_typeddict(cls):
        return
    init = cls.__init__
    if not inspect.isfunction(init):  # an exception with RuntimeError's constructor: takes its message only
        return
    missing = _undocumented(init, doc)
    assert not missing, f"{name}: constructor parameters not documented: {missing}"
