"""callbacks.c: how the answers of user code are read, and module readers on attributes of unexpected types (extb).

A custom operator formula's answer is a count only when it is a non-negative whole number (ints, integer-likes,
whole floats, one-element tensors); a truth value, or anything else, is the site's diagnostic naming the type
returned; an interrupt raised while reading it propagates. A native module whose hyperparameter has a type its
family does not read has no module formula (``unsupported_module_metric``). Counts are the formula's own
arithmetic or docs/module-formulas.md's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from conftest import assert_nothing_left
from torchscan import crawl_module, measure_flops

# ---------------------------------------------------------------------------------------------------------------
# custom formula answers
# ---------------------------------------------------------------------------------------------------------------


def _sin_report(answer):
    return measure_flops(lambda: torch.sin(torch.ones(3)), custom_mapping={torch.ops.aten.sin: lambda *a, **k: answer})


def _messages(report):
    return [d["message"] for d in report["diagnostics"] if d["code"] == "unsupported_operator_formula"]


class _DtypeRaises:
    def __init__(self, error):
        self.error = error

    @property
    def dtype(self):
        raise self.error


class _DtypeUnprintable:
    class _Dtype:
        def __str__(self):
            raise ValueError("unprintable dtype")

    dtype = _Dtype()

    def __float__(self):
        return 3.0


class _FloatInterrupts:
    def __float__(self):
        raise KeyboardInterrupt


class _IndexInterrupts:
    def __index__(self):
        raise KeyboardInterrupt


class _IndexRaises:
    def __index__(self):
        raise ValueError("no index")

    def __float__(self):
        return 6.0


@pytest.mark.parametrize(
    "answer,counted,returned",
    [
        (np.int64(12), 12, None),  # an integer-like counts
        (np.float32(4.0), 4, None),  # a whole numpy float
        (torch.tensor(9.0), 9, None),  # a one-element tensor
        (_IndexRaises(), 6, None),  # __index__ fails: read as the float it also is
        (_DtypeUnprintable(), 3, None),  # a dtype that cannot print is not a truth value
        (np.bool_(True), None, "numpy.bool"),  # truth values are not counts
        (torch.tensor(True), None, "Tensor"),
        (True, None, "bool"),
        (_DtypeRaises(ValueError("no dtype")), None, "_DtypeRaises"),  # read as no number at all
        ("12", None, "str"),
        (np.float64(-2.0), None, "numpy.float64"),
    ],
    ids=repr,
)
def test_a_formula_answer(answer, counted, returned):
    report = _sin_report(answer)
    if counted is not None:
        assert report["by_operator"] == {"aten.sin": counted}
        assert _messages(report) == []
    else:
        assert _messages(report) == [f"the custom formula returned {returned}, not a non-negative finite number"]
        assert report["total"]["status"] != "complete"


@pytest.mark.parametrize("answer", [_FloatInterrupts(), _IndexInterrupts(), _DtypeRaises(KeyboardInterrupt())])
def test_an_interrupt_while_reading_the_answer_propagates(answer):
    model = nn.Linear(3, 3)
    with pytest.raises(KeyboardInterrupt):
        measure_flops(
            lambda: model(torch.ones(1, 3)),
            modules=model,
            custom_mapping={torch.ops.aten.addmm: lambda *a, **k: answer},
        )
    assert_nothing_left(model)


def test_an_exception_that_cannot_print_is_named_by_its_type():
    class Silent(Exception):
        def __str__(self):
            raise RuntimeError("no text")

    def formula(*args, **kwargs):
        raise Silent

    report = measure_flops(lambda: torch.sin(torch.ones(3)), custom_mapping={torch.ops.aten.sin: formula})
    assert _messages(report) == ["the custom formula raised Silent: "]


def test_a_formula_sees_a_list_argument_as_a_list_of_shapes():
    seen = []

    def formula(tensors, dim=0, out_shape=None):
        seen.append((tensors, dim, out_shape))
        return sum(s[0] * s[1] for s in tensors)

    report = measure_flops(
        lambda: torch.cat([torch.ones(2, 3), torch.ones(1, 3)]), custom_mapping={torch.ops.aten.cat: formula}
    )
    assert report["by_operator"] == {"aten.cat": 9}  # 2*3 + 1*3
    [(tensors, dim, out_shape)] = seen
    assert isinstance(tensors, list) and [tuple(s) for s in tensors] == [(2, 3), (1, 3)]
    assert tuple(out_shape) == (3, 3)


# ---------------------------------------------------------------------------------------------------------------
# module readers: attributes of types the family does not read
# ---------------------------------------------------------------------------------------------------------------

ODD = {"on": False}


def _odd(cls, name, value, *args, **kwargs):
    """An instance of a subclass of `cls` whose `name` reads `value` while the crawl is built (a pre-hook of
    the test switches it back before the forward)."""

    def get(self):
        return value if ODD["on"] else self.__dict__["_extb_" + name]

    def put(self, v):
        self.__dict__["_extb_" + name] = v

    module = type("Odd" + cls.__name__, (cls,), {name: property(get, put)})(*args, **kwargs).eval()
    module.register_forward_pre_hook(lambda mod, a: ODD.update(on=False))
    return module


def _crawl(module, *inputs):
    ODD["on"] = True
    try:
        return crawl_module(module, args=inputs)
    finally:
        ODD["on"] = False


def _root_metrics(report):
    return next(layer for layer in report["layers"] if layer["path"] == "")["metrics"]


def _rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


UNREADABLE = [
    (nn.Conv2d, (2, 2, 3), "kernel_size", "3", (1, 2, 5, 5)),  # a string where no string is read
    (nn.Conv2d, (2, 2, 3), "stride", (1.5, 1), (1, 2, 5, 5)),  # a tuple item that is not an int
    (nn.Conv2d, (2, 2, 3), "dilation", 2**70, (1, 2, 5, 5)),  # an int past int64
    (nn.Linear, (4, 3), "in_features", 4.0, (2, 4)),  # a float where an int is read
    (nn.Dropout, (0.5,), "p", "half", (2, 4)),  # not a real number
    (nn.Softmax, (1,), "dim", "last", (2, 4)),  # an int or None is read
    (nn.LayerNorm, (4,), "normalized_shape", 4, (2, 4)),  # no length
    (nn.LayerNorm, (4,), "normalized_shape", ("four",), (2, 4)),  # a length, an item that is not an int
    (nn.LayerNorm, (4,), "normalized_shape", (2**40, 2**40), (2, 4)),  # a row count past int64
    (nn.ConstantPad1d, (2, 0.5), "padding", ("a", 1), (1, 2, 4)),
]


@pytest.mark.parametrize(
    "cls,ctor,name,value,shape", UNREADABLE, ids=[f"{u[0].__name__}.{u[2]}={u[3]!r}" for u in UNREADABLE]
)
def test_an_attribute_of_an_unreadable_type_means_no_formula(cls, ctor, name, value, shape):
    report = _crawl(_odd(cls, name, value, *ctor), _rand(*shape))
    assert _root_metrics(report)["module_flops"]["status"] != "complete"
    codes = {d["code"] for d in report["diagnostics"] if d.get("metric") == "module_flops"}
    assert codes == {"unsupported_module_metric"}


def test_a_list_where_a_tuple_is_read():
    # kernel_size [3, 3] reads as (3, 3): Conv2d(2, 2, 3) on (1,2,5,5), O = 2*3*3 = 18, MACs O*Cin*9 = 324
    report = _crawl(_odd(nn.Conv2d, "kernel_size", [3, 3], 2, 2, 3), _rand(1, 2, 5, 5))
    assert _root_metrics(report)["macs"]["value"] == 324


def test_a_choice_that_is_not_a_string_is_refused():
    report = _crawl(_odd(nn.GELU, "approximate", 5), _rand(2, 4))
    messages = {d["message"] for d in report["diagnostics"] if d.get("metric") == "module_flops"}
    assert any("GELU approximate must be 'none' or 'tanh'" in m for m in messages)


class _OwnGetattr(nn.Linear):
    """A Linear that looks attributes up its own way (a wrapper's pattern): the readers take the ordinary
    lookup."""

    def __getattr__(self, name):
        return super().__getattr__(name)


class _OwnGetattribute(nn.Linear):
    def __getattribute__(self, name):
        return super().__getattribute__(name)


@pytest.mark.parametrize("cls", [_OwnGetattr, _OwnGetattribute])
def test_a_module_with_its_own_lookup_reads_like_the_native_one(cls):
    # Linear(4, 3) on (2, 4): FLOPs 2*B*in*out = 48, MACs 24 (test_module_formulas pins them)
    torch.manual_seed(0)
    module = cls(4, 3)
    metrics = _root_metrics(crawl_module(module, args=(_rand(2, 4),)))
    assert (metrics["module_flops"]["value"], metrics["macs"]["value"]) == (48, 24)


@pytest.mark.parametrize("op", ["sin", "cat"])
def test_an_argument_whose_shape_raises_propagates(op):
    # a tensor subclass whose shape cannot be read, as an operator's argument (alone or in a list): the
    # formula never runs and the error propagates, with no dispatch mode left on the stack
    def unreadable(self):
        raise RuntimeError("shape unreadable")

    bad = torch.ones(3).as_subclass(type("Unreadable", (torch.Tensor,), {"shape": property(unreadable)}))
    seen = []

    def formula(*args, **kwargs):
        seen.append(args)
        return 3

    workload = (lambda: torch.sin(bad)) if op == "sin" else (lambda: torch.cat([bad, bad]))
    with pytest.raises(RuntimeError, match="^shape unreadable$"):
        measure_flops(workload, custom_mapping={getattr(torch.ops.aten, op): formula})
    assert seen == []
    assert torch._C._len_torch_dispatch_stack() == 0
