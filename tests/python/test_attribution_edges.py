"""Parameters and buffers a crawl attributes, when a tensor does not read like one (extb).

attribution.c reads each parameter's and buffer's numel(), dtype and requires_grad. A tensor subclass whose
reads raise (or return a non-integer count) makes the crawl raise that error, with every hook removed and the
training flags restored (docs/architecture.md, "User code and errors": an exception from user code that is not
a module reader's or handler's propagates).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from conftest import assert_nothing_left, training_flags
from torchscan import crawl_module


class NumelRefused(nn.Parameter):
    def numel(self):
        raise RuntimeError("numel refused")


class NumelText(nn.Parameter):
    def numel(self):
        return "4"


class DtypeRefused(nn.Parameter):
    @property
    def dtype(self):
        raise RuntimeError("dtype refused")


class BufferNumelRefused(torch.Tensor):
    def numel(self):
        raise RuntimeError("buffer numel refused")


def _model_with(weight=None, buffer=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    if weight is not None:
        model[0].weight = weight(torch.zeros(2, 2))
    if buffer is not None:
        model[0].register_buffer("extra", torch.zeros(3).as_subclass(buffer))
    model.train()
    model[1].eval()
    return model


@pytest.mark.parametrize(
    "weight,buffer,error,message",
    [
        (NumelRefused, None, RuntimeError, "numel refused"),
        (NumelText, None, TypeError, "'str' object cannot be interpreted as an integer"),
        (DtypeRefused, None, RuntimeError, "dtype refused"),
        (None, BufferNumelRefused, RuntimeError, "buffer numel refused"),
    ],
    ids=["numel-raises", "numel-not-an-int", "dtype-raises", "buffer-numel-raises"],
)
def test_a_tensor_that_does_not_read_is_the_crawls_error(weight, buffer, error, message):
    model = _model_with(weight, buffer)
    flags = training_flags(model)
    with pytest.raises(error) as info:
        crawl_module(model, args=(torch.ones(1, 2),))
    assert str(info.value) == message
    assert training_flags(model) == flags
    assert_nothing_left(model)


def test_the_plain_model_counts():
    # control: Linear(2, 2) = 4 + 2 parameters (24 bytes), a 3-element float32 buffer (12 bytes)
    model = _model_with(buffer=torch.Tensor)
    totals = crawl_module(model, args=(torch.ones(1, 2),))["totals"]
    values = {k: totals[k]["value"] for k in ("parameters", "parameter_bytes", "buffer_elements", "buffer_bytes")}
    assert values == {"parameters": 6, "parameter_bytes": 24, "buffer_elements": 3, "buffer_bytes": 12}


def test_a_scripted_model_counts_its_parameters():
    # a ScriptModule's tensors are read through its mappings: Linear(2, 3) = 6 + 3 parameters
    scripted = torch.jit.script(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    report = crawl_module(scripted, args=(torch.ones(1, 2),))
    assert report["totals"]["parameters"]["value"] == 9
    assert report["totals"]["parameter_bytes"]["value"] == 36


def test_a_meta_model_lists_its_device():
    # Linear(4, 3) on the meta device: 15 parameters, device "meta" (read from the tensor, not assumed cpu)
    report = crawl_module(nn.Linear(4, 3, device="meta"), args=(torch.empty(2, 4, device="meta"),))
    assert report["context"]["devices"] == ["meta"]
    assert report["context"]["dtypes"] == ["torch.float32"]
    assert report["totals"]["parameters"]["value"] == 15


def test_none_children_are_skipped():
    # MultiheadAttention(4, 2): in_proj 3*4*4 + 12, out_proj 16 + 4 = 80 parameters, held by its own row
    mha = nn.MultiheadAttention(4, 2)
    mha.register_module("extra", None)
    x = torch.rand(3, 1, 4)
    report = crawl_module(mha, args=(x, x, x))
    assert report["totals"]["parameters"]["value"] == 80
    assert report["layers"][0]["parameters"] == {"trainable": 80, "frozen": 0, "bytes": 320, "shared": False}


class _Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 3)
        self.unused = nn.Linear(2, 2)
        self.unused.weight = NumelRefused(torch.zeros(2, 2))
        self.register_module("gap", None)

    def forward(self, x):
        return self.used(x)


def test_a_tensor_of_a_module_never_called_is_read_for_the_totals():
    # the model totals read every module's tensors (not only the called ones): its error is the crawl's
    model = _Unused()
    with pytest.raises(RuntimeError, match="numel refused"):
        crawl_module(model, args=(torch.ones(1, 4),))
    assert_nothing_left(model)
