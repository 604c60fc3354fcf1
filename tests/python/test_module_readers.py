"""Module readers of every native family, when a hyperparameter does not read like the family's (extb).

The rule (docs/architecture.md, "User code and errors"; tests/python/test_user_code_errors.py pins it on
Linear): a native-family module whose hyperparameter raises an Exception when the crawl reads it has no module
formula rather than a wrong one: its row's module metrics are not complete, the diagnostic is
``unsupported_module_metric``, the totals are partial, and the forward itself still runs. Here each family
reader meets it at each hyperparameter it reads.

Each case is a subclass of the native class whose attribute ``name`` is a property that raises while armed.
A forward pre-hook of the test disarms it, so the module's own forward (which may read the same attribute)
runs as the native one. The control is the same subclass, never armed: its counts must equal the plain native
module's (which test_module_families.py pins by hand arithmetic), so the failure is the armed read only.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module

ARMED = {"on": False}


def _failing_class(cls: type, name: str) -> type:
    def get(self):
        if ARMED["on"]:
            raise ValueError(f"broken {name}")
        if "_extb_" + name in self.__dict__:
            return self.__dict__["_extb_" + name]
        # a parameter, buffer or child: nn.Module.__setattr__ / register_* keep it in their dicts
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                return self.__dict__[store][name]
        raise AttributeError(name)  # not set yet: register_* asks hasattr first

    def put(self, value):
        self.__dict__["_extb_" + name] = value

    return type("Failing" + cls.__name__, (cls,), {name: property(get, put)})


def rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


def ints(high, *shape):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(0))


# (native class, constructor args, constructor kwargs, input maker, hyperparameters its reader reads)
FAMILIES = [
    (nn.Linear, (4, 3), {}, lambda: rand(2, 4), ["in_features", "out_features"]),
    (nn.ReLU, (), {}, lambda: rand(2, 4), ["inplace"]),
    (nn.ReLU6, (), {}, lambda: rand(2, 4), ["inplace"]),
    (nn.LeakyReLU, (), {}, lambda: rand(2, 4), ["inplace"]),
    (nn.ELU, (), {}, lambda: rand(2, 4), ["inplace"]),
    (
        nn.Conv2d,
        (2, 4, 3),
        {"padding": 1, "groups": 2},
        lambda: rand(1, 2, 5, 5),
        ["in_channels", "out_channels", "groups", "kernel_size", "stride", "padding", "dilation"],
    ),
    (nn.Conv1d, (2, 2, 3), {"padding": "same", "dilation": 2}, lambda: rand(1, 2, 7), ["padding"]),
    (nn.ConvTranspose1d, (2, 3, 3), {}, lambda: rand(1, 2, 5), ["out_channels", "kernel_size"]),
    (
        nn.MaxPool2d,
        (2,),
        {"ceil_mode": True},
        lambda: rand(1, 2, 5, 5),
        ["kernel_size", "stride", "padding", "ceil_mode", "dilation", "return_indices"],
    ),
    (nn.AvgPool1d, (2,), {}, lambda: rand(1, 2, 6), ["count_include_pad", "ceil_mode"]),
    (nn.AdaptiveMaxPool1d, (2,), {}, lambda: rand(1, 2, 6), ["return_indices"]),
    (
        nn.BatchNorm1d,
        (3,),
        {},
        lambda: rand(2, 3),
        ["num_features", "track_running_stats", "momentum", "running_mean", "running_var"],
    ),
    (nn.Dropout, (0.25,), {}, lambda: rand(2, 4), ["p", "inplace"]),
    (nn.LayerNorm, (4,), {}, lambda: rand(2, 4), ["normalized_shape"]),
    (
        nn.MultiheadAttention,
        (4, 2),
        {},
        lambda: rand(3, 1, 4),
        [
            "embed_dim",
            "num_heads",
            "kdim",
            "vdim",
            "batch_first",
            "add_zero_attn",
            "dropout",
            "out_proj",
            "in_proj_bias",
            "bias_k",
        ],
    ),
    (nn.Softmax, (1,), {}, lambda: rand(2, 4), ["dim"]),
    (nn.CosineSimilarity, (), {}, lambda: rand(2, 4), ["dim"]),
    (nn.PairwiseDistance, (), {}, lambda: rand(2, 4), ["norm"]),
    (nn.GELU, (), {}, lambda: rand(2, 4), ["approximate"]),
    (nn.GroupNorm, (2, 4), {}, lambda: rand(1, 4, 3), ["num_groups"]),
    (nn.LocalResponseNorm, (2,), {}, lambda: rand(1, 4, 3, 3), ["size"]),
    (nn.Embedding, (10, 3), {}, lambda: ints(10, 2, 5), ["embedding_dim", "max_norm"]),
    (nn.EmbeddingBag, (10, 3), {}, lambda: ints(10, 2, 5), ["mode"]),
    (nn.ConstantPad1d, (2, 0.5), {}, lambda: rand(1, 2, 4), ["padding"]),
    (nn.Upsample, (), {"scale_factor": 2}, lambda: rand(1, 2, 3), ["mode"]),
    (
        nn.GRU,
        (3, 4),
        {},
        lambda: rand(5, 1, 3),
        ["mode", "input_size", "hidden_size", "num_layers", "proj_size", "bidirectional", "bias", "dropout"],
    ),
    (nn.RNNCell, (3, 4), {}, lambda: rand(2, 3), ["input_size", "hidden_size", "bias", "nonlinearity"]),
    (nn.Bilinear, (3, 2, 4), {}, None, ["in1_features", "in2_features", "out_features"]),
    (
        nn.Fold,
        ((3, 3), 2),
        {},
        lambda: rand(1, 8, 4),
        ["output_size", "kernel_size", "dilation", "padding", "stride"],
    ),
    (nn.LPPool1d, (2, 2), {}, lambda: rand(1, 2, 6), ["norm_type", "kernel_size", "ceil_mode", "stride"]),
    (nn.MaxUnpool1d, (2,), {}, None, ["kernel_size", "stride", "padding"]),
    (
        nn.TransformerEncoderLayer,
        (4, 2, 8),
        {"dropout": 0.0},
        lambda: rand(3, 1, 4),
        ["norm_first", "activation", "self_attn", "linear1", "linear2", "norm1", "norm2", "dropout", "dropout2"],
    ),
    (
        nn.TransformerDecoderLayer,
        (4, 2, 8),
        {"dropout": 0.0},
        None,
        ["multihead_attn", "norm3", "dropout3"],
    ),
    (nn.TransformerEncoder, None, {}, lambda: rand(3, 1, 4), ["enable_nested_tensor", "layers", "norm"]),
    (nn.TransformerDecoder, None, {}, None, ["layers"]),
    (nn.Transformer, (4, 2, 1, 1, 8), {"dropout": 0.0}, None, ["encoder", "decoder"]),
]

CASES = [pytest.param(f, name, id=f"{f[0].__name__}.{name}") for f in FAMILIES for name in f[4]]


def _args(family):
    cls, _, _, make, _ = family
    if cls is nn.MaxUnpool1d:
        return nn.MaxPool1d(2, return_indices=True)(rand(1, 2, 6))
    if cls in (nn.TransformerDecoderLayer, nn.TransformerDecoder, nn.Transformer):
        return (rand(3, 1, 4), rand(2, 1, 4))
    if cls is nn.Bilinear:
        return (rand(2, 3), rand(2, 2))
    if cls in (nn.CosineSimilarity, nn.PairwiseDistance):
        return (make(), make() + 1)
    if cls is nn.MultiheadAttention:
        x = make()
        return (x, x, x)
    return (make(),)


def _same(a, b):
    """Equal hyperparameters: tensors by value, modules by their type (each instance is its own)."""
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, nn.Module):
        return type(a) is type(b)
    return a == b


def _root(report):
    return next(layer for layer in report["layers"] if layer["path"] == "")


def _crawl(module, args, armed):
    module.eval()
    hook = module.register_forward_pre_hook(lambda mod, a: ARMED.update(on=False))
    ARMED["on"] = armed
    try:
        return crawl_module(module, args=args)
    finally:
        ARMED["on"] = False
        hook.remove()


@pytest.mark.parametrize("family,name", CASES)
def test_a_failing_hyperparameter_leaves_the_module_without_a_formula(family, name):
    cls, ctor, kwargs, _, _ = family
    args = _args(family)
    if ctor is None:  # a stack of one layer, built by the class itself
        layer = nn.TransformerEncoderLayer if cls is nn.TransformerEncoder else nn.TransformerDecoderLayer
        ctor, kwargs = (layer(4, 2, 8, dropout=0.0), 1), {}
        if cls is nn.TransformerEncoder:
            kwargs = {"norm": nn.LayerNorm(4), "enable_nested_tensor": False}
    failing = _failing_class(cls, name)
    torch.manual_seed(0)
    native = cls(*ctor, **kwargs)
    torch.manual_seed(0)
    control = failing(*ctor, **kwargs)
    assert _same(getattr(control, name), getattr(native, name))

    # the control: the subclass reads like the native class (same counts, all complete)
    expected = _root(crawl_module(native.eval(), args=args))["metrics"]
    got = _root(_crawl(control, args, armed=False))["metrics"]
    for metric in ("module_flops", "macs", "dmas"):
        assert expected[metric]["status"] == "complete", (metric, expected[metric])
        assert got[metric]["status"] == "complete", (metric, got[metric])
        assert got[metric]["value"] == expected[metric]["value"]

    # armed: the reader's failure means no formula (not a wrong one), and the forward still ran
    torch.manual_seed(0)
    broken = failing(*ctor, **kwargs)
    report = _crawl(broken, args, armed=True)
    metrics = _root(report)["metrics"]
    if next(broken.children(), None) is not None:
        # a module with children and no formula reads as a container: no module metrics of its own (as a
        # custom module with children); the native one owns its subtree
        assert "module_flops" not in metrics
        if cls is nn.MultiheadAttention:  # out_proj is not called: nothing counts the model
            assert report["totals"]["module_flops"]["status"] == "unavailable"
    else:
        assert metrics["module_flops"]["status"] != "complete"
        assert report["totals"]["module_flops"]["status"] == "partial"
        codes = {(d["code"], d["path"]) for d in report["diagnostics"] if d.get("metric") == "module_flops"}
        assert ("unsupported_module_metric", "") in codes
    assert metrics["calls"]["value"] == 1  # the forward ran, once
    assert _same(getattr(broken, name), getattr(native, name))  # the property is back to reading normally
