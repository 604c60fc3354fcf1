"""The binding's readers on odd inputs: attention masks whose values cannot be read or read otherwise (masks.c), and
the call descriptions of nested, None, non-tensor and unusual tensors (describe.c through describe_call).

Expectations come from the contract's text (a mask that cannot be read makes token dependencies unavailable with
an unsupported_token_dependencies diagnostic naming the argument) and from PyTorch itself (shapes, dtypes)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchscan
from torchscan import _engine


def _mha_report(**kwargs):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torchscan.crawl_module(mha, args=(x, x, x), kwargs=kwargs)


def _token_messages(report):
    return [d["message"] for d in report["diagnostics"] if d["code"] == "unsupported_token_dependencies"]


def _causal(n=3):
    return torch.full((n, n), float("-inf")).triu(1)


def test_a_negative_view_mask_is_not_read_through_its_flipped_signs():
    """torch._neg_view shares storage with flipped signs: read in place it would be the opposite mask."""
    mask = torch._neg_view(-_causal())
    assert mask.is_neg() and torch.equal(mask, _causal())
    report = _mha_report(attn_mask=mask)
    [message] = _token_messages(report)
    assert "attn_mask cannot be read" in message
    # the same values in a plain tensor are read: a causal mask gives a prefix relation
    plain = _mha_report(attn_mask=_causal())
    assert _token_messages(plain) == []


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_masks_of_each_floating_dtype_are_read(dtype):
    """An attention in float64, bfloat16 or float16 takes a mask of its dtype (PyTorch refuses another): each is
    read in its own element type, and the causal mask gives the prefix relation."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).to(dtype)
    x = torch.randn(3, 1, 4, dtype=dtype)
    report = torchscan.crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": _causal().to(dtype)})
    assert _token_messages(report) == []
    assert report["layers"][0]["token_dependencies"]["sources"][0]["relation"] == {"kind": "prefix"}
    padding = torch.tensor([[False, False, True]])
    report = torchscan.crawl_module(mha, args=(x, x, x), kwargs={"key_padding_mask": padding})
    [message] = _token_messages(report)
    assert "key_padding_mask excludes positions" in message


class _Raising:
    def __init__(self, error):
        self.error = error

    def __get__(self, obj, objtype=None):
        raise self.error


@pytest.mark.parametrize("attribute", ["stride", "data_ptr", "is_neg"])
def test_a_mask_whose_layout_cannot_be_read_stays_unread(monkeypatch, attribute):
    """torch.Tensor's own methods failing while the mask is read (patched on the class for this test): an
    Exception leaves the values unread, with the diagnostic, and the crawl goes on."""
    mask = _causal()
    real = getattr(torch.Tensor, attribute)
    calls = []

    def failing(self, *args):
        if self is mask:
            calls.append(attribute)
            raise RuntimeError("no layout")
        return real(self, *args)

    monkeypatch.setattr(torch.Tensor, attribute, failing)
    report = _mha_report(attn_mask=mask)
    monkeypatch.undo()
    assert calls, "the reader did not ask"
    [message] = _token_messages(report)
    assert "attn_mask cannot be read" in message


def test_an_interrupt_while_a_mask_is_read_propagates_and_leaves_nothing(monkeypatch):
    from conftest import assert_nothing_left

    mask = _causal()
    real = torch.Tensor.stride

    def interrupted(self, *args):
        if self is mask:
            raise KeyboardInterrupt
        return real(self, *args)

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).train()
    x = torch.randn(3, 1, 4)
    monkeypatch.setattr(torch.Tensor, "stride", interrupted)
    with pytest.raises(KeyboardInterrupt):
        torchscan.crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask})
    monkeypatch.undo()
    assert_nothing_left(mha)
    assert mha.training
    assert _token_messages(torchscan.crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask})) == []


def test_a_device_mask_is_copied_to_host_outside_the_dispatch_modes(monkeypatch):
    """is_cpu False (patched: this machine has no accelerator) sends the mask through the host copy, made inside
    torch._C._DisableTorchDispatch; the copied values are read (a causal mask: no diagnostic)."""
    monkeypatch.setattr(torch.Tensor, "is_cpu", property(lambda self: False))
    report = _mha_report(attn_mask=_causal())
    monkeypatch.undo()
    assert _token_messages(report) == []
    assert report["layers"][0]["token_dependencies"]["sources"][0]["relation"] == {"kind": "prefix"}


def test_a_failing_host_copy_leaves_the_mask_unread(monkeypatch):
    mask = _causal()
    real_cpu = torch.Tensor.cpu

    def cpu(self, *args, **kwargs):
        if self is mask:
            raise RuntimeError("device lost")
        return real_cpu(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "is_cpu", property(lambda self: False))
    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    report = _mha_report(attn_mask=mask)
    monkeypatch.undo()
    [message] = _token_messages(report)
    assert "attn_mask cannot be read" in message


# ---------------------------------------------------------------------------------------------------------------
# describe_call: odd inputs


def test_describe_call_of_nested_containers_none_and_scalars():
    x = torch.zeros(2, 3)
    meta = _engine.describe_call((x, [x, (None, 1.5)], {"k": x, 3: "s"}, None, True, "text", 7), {"m": None})
    args = meta["args"]
    assert args[0]["kind"] == "tensor" and args[0]["shape"] == [2, 3] and args[0]["dtype"] == "torch.float32"
    assert [a["kind"] for a in args[1:]] == ["list", "mapping", "none", "scalar", "scalar", "scalar"]
    assert [a["type"] for a in args[4:]] == ["bool", "str", "int"]
    assert args[1]["items"][0]["shape"] == [2, 3]
    assert [(item["key"], item["key_type"]) for item in args[2]["items"]] == [("k", "str"), (3, "int")]
    assert meta["kwargs"]["m"]["kind"] == "none"


@pytest.mark.parametrize(
    ("make", "dtype", "device"),
    [
        (lambda: torch.zeros(2, 3, dtype=torch.complex64), "torch.complex64", "cpu"),
        (lambda: torch.zeros(2, 3).to_sparse(), "torch.float32", "cpu"),
        (lambda: torch.zeros(2, 3, device="meta"), "torch.float32", "meta"),
        (lambda: torch.quantize_per_tensor(torch.zeros(2, 3), 0.1, 0, torch.qint8), "torch.qint8", "cpu"),
        (lambda: nn.Parameter(torch.zeros(2, 3)), "torch.float32", "cpu"),
    ],
    ids=["complex", "sparse", "meta", "quantized", "parameter"],
)
def test_describe_call_of_unusual_tensors(make, dtype, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensor creation is deprecated
        t = make()
    [desc] = _engine.describe_call((t,), {})["args"]
    assert desc["kind"] == "tensor"
    assert desc["dtype"] == dtype == str(t.dtype)
    assert desc["shape"] == [2, 3] == list(t.shape)
    assert desc["device"] == device


def test_describe_call_of_a_tensor_subclass_and_a_fake_tensor():
    class Tagged(torch.Tensor):
        pass

    t = torch.zeros(4).as_subclass(Tagged)
    [desc] = _engine.describe_call((t,), {})["args"]
    assert desc["kind"] == "tensor" and desc["shape"] == [4]
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.zeros(5, 2))
        [desc] = _engine.describe_call((fake,), {})["args"]
    assert desc["kind"] == "tensor" and desc["shape"] == [5, 2]
