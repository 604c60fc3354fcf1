"""handlers.c: what a custom module handler returns, read as counts or diagnostics (extb).

A bare number must be a finite, non-negative count (not a bool); a MetricResult dict's status, unit, scope and
method must be non-empty strings; the handler's identity (``module.qualname`` of its estimate, or of its type)
names it in the report. Linear(4, 3) on (1, 4) is the handled module.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

from conftest import assert_nothing_left
from torchscan import ModuleHandler, crawl_module


def _crawl(estimate):
    model = nn.Sequential(nn.Linear(4, 3))
    report = crawl_module(model, args=(torch.ones(1, 4),), custom_modules={nn.Linear: ModuleHandler(estimate)})
    assert_nothing_left(model)
    return report


def _invalid(report):
    return [d["message"] for d in report["diagnostics"] if d["code"] == "custom_metric_invalid"]


@pytest.mark.parametrize(
    "value,why",
    [
        (-1, "a negative value is not a count"),
        (-0.5, "the value must be finite and non-negative"),
        (float("inf"), "the value must be finite and non-negative"),
        (2**64, "the integer is outside the 64-bit range"),
        (-(2**64), "the integer is outside the 64-bit range"),
        (True, "a bool is not a count"),
        ("7", "expected a number, a MetricResult dict or None"),
    ],
    ids=repr,
)
def test_a_bare_value_that_is_not_a_count(value, why):
    report = _crawl(lambda call: {"module_flops": value})
    [message] = _invalid(report)
    assert why in message
    assert report["layers"][1]["metrics"]["module_flops"]["status"] == "unavailable"


def test_a_bare_whole_float_is_a_count():
    report = _crawl(lambda call: {"module_flops": 12.0, "macs": 6})
    metrics = report["layers"][1]["metrics"]
    assert (metrics["module_flops"]["value"], metrics["macs"]["value"]) == (12, 6)


def _metric(**over):
    base = {
        "status": "complete",
        "value": 7,
        "known_value": 7,
        "unit": "FLOPs",
        "scope": "module_call",
        "method": "my_formula",
    }
    base.update(over)
    return base


@pytest.mark.parametrize("field,value", [("status", 1), ("scope", None), ("method", b"m"), ("method", "")])
def test_metric_result_text_fields(field, value):
    report = _crawl(lambda call: {"module_flops": _metric(**{field: value})})
    [message] = _invalid(report)
    assert "status, unit, scope and method must be non-empty strings" in message


def test_an_unknown_metric_whose_repr_raises():
    class Key:
        def __repr__(self):
            raise RuntimeError("no repr")

    report = _crawl(lambda call: {Key(): 1})
    messages = [d["message"] for d in report["diagnostics"] if d["code"] == "custom_handler_invalid"]
    # the whole result is invalid: one diagnostic per metric of the call, each saying why
    assert len(messages) == 6 and len(set(messages)) == 1
    assert "unknown metric ?; supported: module_flops, macs, dmas" in messages[0]


class _Estimator:
    """A callable object: no __qualname__ of its own, so its type's names it."""

    def __call__(self, call):
        return {"module_flops": 5}


def _identity(report):
    return report["layers"][1]["metrics"]["module_flops"]["method"]


def test_identities_of_estimates_without_their_own_names():
    # a callable instance: named by its type
    assert _identity(_crawl(_Estimator())) == f"custom_module_handler:{__name__}._Estimator"
    # a partial has no __qualname__ either: its type (functools.partial) names it
    partial = functools.partial(lambda call, n: {"module_flops": n}, n=5)
    assert _identity(_crawl(partial)).endswith(".partial")


def test_an_estimate_whose_module_is_none():
    def estimate(call):
        return {"module_flops": 9}

    estimate.__module__ = None
    report = _crawl(estimate)
    expected = "custom_module_handler:<unknown>.test_an_estimate_whose_module_is_none.<locals>.estimate"
    assert _identity(report) == expected
    assert report["layers"][1]["metrics"]["module_flops"]["value"] == 9
