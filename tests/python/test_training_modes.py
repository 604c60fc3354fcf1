"""Modes read at each call propagate their errors as the forward's (docs/architecture.md, "User code and errors":
"the modes read at each call (module.training, a native Transformer's sub-layer modes), whose errors propagate
as the forward's") (extb).

A sub-layer whose ``training`` flag raises once the model's forward began (a pre-hook arms it): the crawl raises
that very exception, removes every hook and restores every training flag; without it the same model crawls.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from conftest import assert_nothing_left, training_flags
from torchscan import crawl_module

ARMED = {"on": False}


class _FlagDropout(nn.Dropout):
    @property
    def training(self):
        if ARMED["on"]:
            raise ValueError("training flag unreadable")
        return self.__dict__["_extb_training"]

    @training.setter
    def training(self, value):
        self.__dict__["_extb_training"] = value


def _layer(decoder=False):
    cls = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
    return cls(4, 2, 8, dropout=0.0)


def _encoder_layer():
    layer = _layer()
    layer.dropout1 = _FlagDropout(0.0)
    return layer, (torch.rand(3, 1, 4),)


class _FlagAttention(nn.MultiheadAttention):
    training = _FlagDropout.training


def _encoder_layer_attention():
    layer = _layer()
    torch.manual_seed(0)
    attention = _FlagAttention(4, 2)
    attention.load_state_dict(layer.self_attn.state_dict())
    layer.self_attn = attention
    return layer, (torch.rand(3, 1, 4),)


def _decoder_layer():
    layer = _layer(decoder=True)
    layer.dropout3 = _FlagDropout(0.0)
    return layer, (torch.rand(2, 1, 4), torch.rand(3, 1, 4))


def _encoder_stack():
    stack = nn.TransformerEncoder(_layer(), 2, enable_nested_tensor=False)
    stack.layers[1].dropout2 = _FlagDropout(0.0)
    return stack, (torch.rand(3, 1, 4),)


def _transformer(part):
    def make():
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
        if part == "encoder":
            model.encoder.layers[0].dropout = _FlagDropout(0.0)
        else:
            model.decoder.layers[0].dropout1 = _FlagDropout(0.0)
        return model, (torch.rand(3, 1, 4), torch.rand(2, 1, 4))

    return make


def _relu():
    class _FlagReLU(nn.ReLU):
        training = _FlagDropout.training

    return nn.Sequential(_FlagReLU()), (torch.rand(2, 4),)


@pytest.mark.parametrize(
    "make",
    [
        _encoder_layer,
        _encoder_layer_attention,
        _decoder_layer,
        _encoder_stack,
        _transformer("encoder"),
        _transformer("decoder"),
        _relu,
    ],
    ids=[
        "encoder layer",
        "encoder attention",
        "decoder layer",
        "encoder stack",
        "transformer encoder",
        "transformer decoder",
        "relu",
    ],
)
def test_a_mode_that_cannot_be_read_propagates(make):
    model, args = make()
    model.train()
    flags = training_flags(model)
    assert crawl_module(model, args=args)["layers"][0]["metrics"]["calls"]["value"] == 1  # unarmed: it crawls
    hook = model.register_forward_pre_hook(lambda mod, a: ARMED.update(on=True))
    try:
        with pytest.raises(ValueError, match="training flag unreadable"):
            crawl_module(model, args=args)
    finally:
        ARMED["on"] = False
        hook.remove()
    assert training_flags(model) == flags
    assert_nothing_left(model)
