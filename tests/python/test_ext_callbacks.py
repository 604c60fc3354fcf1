"""callbacks.c: what a caller's custom operator formula receives (shapes or, marked _get_raw, the real arguments; an
operator's keyword-only arguments too) and how its answer is read (whole numbers as counts, fractions and numbers past
int64 as diagnostics naming what was returned). The oracle: the formula's own arithmetic on shapes PyTorch gives."""

from __future__ import annotations

import pytest
import torch

from torchscan import measure_flops

from conftest import assert_nothing_left


def _diagnostics(report):
    return [d["message"] for d in report["diagnostics"] if d["code"] == "unsupported_operator_formula"]


def test_a_formula_sees_shapes_of_keyword_only_arguments_and_the_output():
    seen = []

    def formula(a, b, alpha=None, out_shape=None):
        seen.append((a, b, alpha, out_shape))
        return a[0] * a[1]

    x, y = torch.ones(2, 3), torch.ones(2, 3)
    report = measure_flops(lambda: torch.add(x, y, alpha=2), custom_mapping={torch.ops.aten.add: formula})
    assert report["by_operator"] == {"aten.add": 6}
    [(a, b, alpha, out_shape)] = seen
    assert (tuple(a), tuple(b), tuple(out_shape)) == ((2, 3), (2, 3), (2, 3))
    assert alpha == 2  # a scalar keyword stays itself


def test_a_raw_formula_sees_the_tensors_and_out_val():
    seen = []

    def formula(a, b, alpha=None, out_val=None):
        seen.append((a, b, alpha, out_val))
        return int(out_val.numel())

    formula._get_raw = True
    x, y = torch.ones(2, 3), torch.full((2, 3), 2.0)
    report = measure_flops(lambda: torch.add(x, y, alpha=3), custom_mapping={torch.ops.aten.add: formula})
    assert report["by_operator"] == {"aten.add": 6}
    [(a, b, alpha, out)] = seen
    assert a is x and b is y and alpha == 3
    assert torch.equal(out, torch.full((2, 3), 7.0))


@pytest.mark.parametrize(
    ("returned", "counted", "message"),
    [
        (7.0, 7, None),  # a whole float is a count
        (2**62, 2**62, None),
        (2**63, None, "does not fit in a signed 64-bit integer"),
        (2**70, None, "does not fit in a signed 64-bit integer"),
        (1e30, None, "does not fit in a signed 64-bit integer"),
        (2.5, None, "returned 2.5, not a whole number of FLOPs"),
        (float("inf"), None, "returned float, not a non-negative finite number"),
        (-3.0, None, "returned float, not a non-negative finite number"),
    ],
    ids=repr,
)
def test_a_formula_answer_is_read_as_a_count_or_a_diagnostic(returned, counted, message):
    report = measure_flops(lambda: torch.sin(torch.ones(3)), custom_mapping={torch.ops.aten.sin: lambda *a, **k: returned})
    if counted is not None:
        assert report["by_operator"] == {"aten.sin": counted}
        assert _diagnostics(report) == []
    else:
        [text] = _diagnostics(report)
        assert message in text
        assert report["total"]["status"] != "complete"


class _RaisingFlag:
    def __init__(self, error):
        self.error = error

    def __call__(self, *args, **kwargs):
        return 1

    @property
    def _get_raw(self):
        raise self.error


def test_a_formula_whose_raw_flag_raises_propagates_and_leaves_nothing():
    """Reading the _get_raw mark is not the formula's call: its error propagates (test_flops pins it for
    __bool__; here a property), as an interrupt does, and the model is left as it was."""
    with pytest.raises(ValueError, match="flag"):
        measure_flops(lambda: torch.sin(torch.ones(3)),
                      custom_mapping={torch.ops.aten.sin: _RaisingFlag(ValueError("flag"))})
    assert torch._C._len_torch_dispatch_stack() == 0
    model = torch.nn.Linear(3, 3)
    with pytest.raises(KeyboardInterrupt):
        measure_flops(lambda: model(torch.ones(1, 3)), modules=model,
                      custom_mapping={torch.ops.aten.addmm: _RaisingFlag(KeyboardInterrupt())})
    assert_nothing_left(model)


def test_a_formula_whose_answer_cannot_be_converted():
    class Weird:
        def __index__(self):
            raise RuntimeError("no index")

        def __float__(self):
            raise RuntimeError("no float")

    report = measure_flops(lambda: torch.sin(torch.ones(3)), custom_mapping={torch.ops.aten.sin: lambda *a, **k: Weird()})
    [text] = _diagnostics(report)
    assert "Weird" in text or "RuntimeError" in text


# ---------------------------------------------------------------------------------------------------------------
# handlers.c: MetricResult dicts returned by a custom module handler


def _metric(**over):
    base = {"status": "complete", "value": 7, "known_value": 7, "unit": "FLOPs", "scope": "module_call",
            "method": "my_formula"}
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


@pytest.mark.parametrize(
    ("metric", "why"),
    [
        (_metric(extra=1), "needs exactly status, value, known_value"),
        (_metric(method=...), "needs exactly status, value, known_value"),
        ({**_metric(method=...), "other": 1}, "needs exactly status, value, known_value"),
        (_metric(unit=3), "must be non-empty strings"),
        (_metric(scope=""), "must be non-empty strings"),
        (_metric(unit="bytes"), "the unit does not match the metric"),
        (_metric(status="done"), "status must be complete, partial or unavailable"),
        (_metric(status="unavailable", value=None, known_value=3), "an unavailable metric has no value"),
        (_metric(status="partial"), "a partial metric has value None"),
        (_metric(known_value=8), "a complete metric needs known_value equal to value"),
        (_metric(value="7"), "expected a number, a MetricResult dict or None"),
        (_metric(known_value=float("nan")), "the value must be finite and non-negative"),
    ],
    ids=["extra", "missing", "other key", "unit type", "empty scope", "unit", "status", "unavailable value",
         "partial value", "unequal", "str value", "nan known"],
)
def test_a_malformed_metric_result_is_a_diagnostic(metric, why):
    from torch import nn

    from torchscan import ModuleHandler, crawl_module

    model = nn.Sequential(nn.Linear(4, 3))
    report = crawl_module(model, args=(torch.ones(1, 4),),
                          custom_modules={nn.Linear: ModuleHandler(lambda call: {"module_flops": metric})})
    diags = [d for d in report["diagnostics"] if d["code"] == "custom_metric_invalid"]
    assert len(diags) == 1, report["diagnostics"]
    assert why in diags[0]["message"]
    assert report["layers"][1]["metrics"]["module_flops"]["status"] == "unavailable"
    assert_nothing_left(model)


@pytest.mark.parametrize(
    ("metric", "status", "value"),
    [
        (_metric(), "complete", 7),
        (_metric(status="partial", value=None, known_value=5), "partial", None),
        (_metric(status="unavailable", value=None, known_value=None), "unavailable", None),
        (_metric(value=7.0, known_value=7.0), "complete", 7),
    ],
    ids=["complete", "partial", "unavailable", "float"],
)
def test_a_well_formed_metric_result_is_taken(metric, status, value):
    from torch import nn

    from torchscan import ModuleHandler, crawl_module

    report = crawl_module(nn.Sequential(nn.Linear(4, 3)), args=(torch.ones(1, 4),),
                          custom_modules={nn.Linear: ModuleHandler(lambda call: {"module_flops": metric})})
    got = report["layers"][1]["metrics"]["module_flops"]
    assert got["status"] == status and got["value"] == value
    assert [d for d in report["diagnostics"] if d["code"] == "custom_metric_invalid"] == []
