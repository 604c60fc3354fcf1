"""describe.c: the metadata records of a layer call's input and output (contract 1.1), on unusual values (extb).

Shapes, dtypes and devices are recorded, never values; mappings keep only int, bool and identifier keys; a
value nested deeper than 64 levels, or past 10,000 values per argument, is recorded by its type only; bad
values (a mapping whose items are not pairs, a tensor whose shape is not a tuple) are the crawl's TypeError,
with nothing left behind.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import pytest
import torch
from torch import nn

from conftest import assert_nothing_left
from torchscan import crawl_module


class First(nn.Module):
    """Returns its first positional argument."""

    def forward(self, *args, **kwargs):
        return args[0]


def _call(*args, **kwargs):
    report = crawl_module(First(), args=args, kwargs=kwargs)
    row = report["layers"][0]
    return row["input"], row["output"]


def _tensor(shape, dtype="torch.float32", device="cpu"):
    return {"kind": "tensor", "shape": list(shape), "dtype": dtype, "device": device, "requires_grad": False}


def test_a_meta_device_tensor():
    inp, out = _call(torch.ones(2, 3, device="meta"))
    assert inp == {"args": [_tensor((2, 3), device="meta")], "kwargs": {}}
    assert out == _tensor((2, 3), device="meta")


def test_quantized_and_bits_dtypes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quantize_per_tensor's deprecation
        q = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)
    inp, out = _call(q, torch.zeros(3, dtype=torch.uint8).view(torch.bits8))
    assert inp["args"] == [_tensor((2,), "torch.qint8"), _tensor((3,), "torch.bits8")]
    assert out == _tensor((2,), "torch.qint8")


def test_more_than_twelve_dims_keep_their_sizes():
    inp, _ = _call(torch.ones((1,) * 12 + (2,)))
    assert inp["args"] == [_tensor((1,) * 12 + (2,))]


def test_nested_tensors_have_no_shape():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the strided layout's prototype warning
        strided = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    jagged = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    nested = {"kind": "nested_tensor", "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    for value in (strided, jagged):
        inp, out = _call(value)
        assert inp["args"] == [nested] and out == nested


class _Map(Mapping):
    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


def test_mapping_keys_kept_and_dropped():
    mapping = _Map({"name": torch.ones(2), 3: 1.5, "a path/x": 1, True: None, 2**70: "big", (1, 2): 0})
    inp, _ = _call(torch.ones(1), mapping)
    assert inp["args"][1] == {
        "kind": "mapping",
        "type": "_Map",
        "items": [
            {"key": "name", "key_type": "str", "value": _tensor((2,))},
            {"key": 3, "key_type": "int", "value": {"kind": "scalar", "type": "float"}},
            {"key_type": "str", "value": {"kind": "scalar", "type": "int"}},  # not an identifier: dropped
            {"key": True, "key_type": "bool", "value": {"kind": "none"}},
            {"key_type": "int", "value": {"kind": "scalar", "type": "str"}},  # past int64: dropped
            {"key_type": "tuple", "value": {"kind": "scalar", "type": "int"}},
        ],
    }


def test_keyword_names_that_are_not_identifiers_are_dropped():
    inp, _ = _call(torch.ones(1), **{"a b": torch.ones(1), "ok": 1})
    assert inp["kwargs"] == {"ok": {"kind": "scalar", "type": "int"}}


def test_deep_nesting_is_recorded_by_type():
    deep = 0
    for _ in range(70):
        deep = [deep]
    inp, _ = _call(torch.ones(1), deep)
    record, levels = inp["args"][1], 0
    while record["kind"] == "list":
        record, levels = record["items"][0], levels + 1
    # an argument is at depth 1: lists at depths 1..64 are described, the one at 65 by its type
    assert levels == 64 and record == {"kind": "object", "type": "list"}


def test_values_past_the_budget_are_recorded_by_type():
    inp, _ = _call(torch.ones(1), [0] * 10005)
    items = inp["args"][1]["items"]
    # 10,000 values per argument: the list and 9,999 items; the last 6 items by type only
    assert len(items) == 10005
    assert items[9998] == {"kind": "scalar", "type": "int"}
    assert items[9999:] == [{"kind": "object", "type": "int"}] * 6


class _NotPairs(_Map):
    def items(self):
        return [(1, 2, 3)]


class _ListShape(torch.Tensor):
    @property
    def shape(self):
        return [2]


@pytest.mark.parametrize(
    "value,message",
    [(_NotPairs({"a": 1}), "mapping items are not pairs"), ("list-shape", "tensor.shape is not a tuple")],
    ids=["not-pairs", "list-shape"],
)
def test_bad_values_are_the_crawls_type_error(value, message):
    if value == "list-shape":
        value = torch.ones(2).as_subclass(_ListShape)
    model = First()
    with pytest.raises(TypeError, match=message):
        crawl_module(model, args=(value,) if isinstance(value, torch.Tensor) else (torch.ones(1), value))
    assert_nothing_left(model)


@pytest.mark.parametrize("name", ["is_nested", "shape", "dtype", "is_cpu", "requires_grad", "layout", "device"])
def test_a_tensor_attribute_that_raises_is_the_crawls_error(name):
    # a tensor subclass whose metadata cannot be read: its own error propagates, nothing is left behind. The
    # device is read only off the CPU (is_cpu answers for a CPU tensor): a meta tensor here
    def unreadable(self):
        raise RuntimeError(f"{name} unreadable")

    cls = type("Unreadable", (torch.Tensor,), {name: property(unreadable)})
    value = torch.ones(2, device="meta" if name == "device" else "cpu").as_subclass(cls)
    model = First()
    with pytest.raises(RuntimeError, match=f"^{name} unreadable$"):
        crawl_module(model, args=(value,))
    assert_nothing_left(model)
    if name == "device":  # on the CPU the device is not read at all
        inp, _ = _call(torch.ones(2).as_subclass(cls))
        assert inp["args"] == [_tensor((2,))]


@pytest.mark.parametrize("where", ["list", "tuple", "dict", "mapping", "keyword", "output"])
def test_an_unreadable_tensor_inside_a_container_is_the_crawls_error(where):
    def unreadable(self):
        raise RuntimeError("shape unreadable")

    bad = torch.ones(2).as_subclass(type("Unreadable", (torch.Tensor,), {"shape": property(unreadable)}))
    good = torch.ones(1)
    args, kwargs, model = (good,), {}, First()
    if where == "list":
        args = (good, [good, bad])
    elif where == "tuple":
        args = (good, (1, (bad,)))
    elif where == "dict":
        args = (good, {"x": bad})
    elif where == "mapping":
        args = (good, _Map({"x": bad}))
    elif where == "keyword":
        kwargs = {"extra": bad}
    else:
        model = _Returns([good, bad])  # the row's output holds it
    with pytest.raises(RuntimeError, match="^shape unreadable$"):
        crawl_module(model, args=args, kwargs=kwargs)
    assert_nothing_left(model)


class _Returns(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, *args, **kwargs):
        return self.value
