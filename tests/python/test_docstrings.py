"""Every public function documents each parameter by name, what it returns and what it raises."""

from __future__ import annotations

import inspect

import pytest

import torchscan
from torchscan import modules, process, utils


def _public_functions():
    seen = {}
    for owner, names in (
        (torchscan, torchscan.__all__),
        (process, process.__all__),
        (modules, modules.__all__),
        (utils, utils.__all__),
        (torchscan.crawler, torchscan.crawler.__all__),
    ):
        for name in names:
            obj = getattr(owner, name)
            if inspect.isfunction(obj):
                seen[f"{owner.__name__}.{name}"] = obj
    return sorted(seen.items())


FUNCTIONS = _public_functions()


def test_the_walk_finds_the_public_functions():
    names = {name.rsplit(".", 1)[1] for name, _ in FUNCTIONS}
    assert {"crawl_module", "summary", "measure_latency", "measure_workload", "format_s", "module_rf"} <= names
    assert {"measure_peak_memory", "measure_peak_rss", "metric_result", "render_report"} <= names


@pytest.mark.parametrize(("name", "function"), FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
def test_every_parameter_return_and_error_is_documented(name, function):
    doc = inspect.getdoc(function) or ""
    # by name: an Args entry ("name:" or "name, other: ..."), or ``name`` in the text
    missing = [
        p for p in inspect.signature(function).parameters if not any(f in doc for f in (f"{p}:", f"{p},", f"``{p}``"))
    ]
    assert not missing, f"{name}: parameters not documented: {missing}"
    assert "Returns:" in doc, f"{name}: no Returns: section"
    assert "Raises" in doc, f"{name}: no Raises section"
