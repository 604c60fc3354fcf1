"""Module readers' refusals and unusual options of native families (extb).

A family reader refuses a module whose hyperparameter holds a value outside the family's formulas (the
diagnostic is ``module_metric_error`` with the reason), reads string paddings and optional strides, and
refuses Transformer stacks whose parts are not native or not alike. Counts carry their hand arithmetic
(docs/module-formulas.md's formulas; O = output elements, K = window elements).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module

MODULE_METRICS = ("module_flops", "macs", "dmas")


def rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


def _root(report):
    return next(layer for layer in report["layers"] if layer["path"] == "")


def counts(report, path=""):
    metrics = next(layer for layer in report["layers"] if layer["path"] == path)["metrics"]
    for name in MODULE_METRICS:
        assert metrics[name]["status"] == "complete", (name, metrics[name], report["diagnostics"])
    return tuple(metrics[name]["value"] for name in MODULE_METRICS)


def module_errors(report):
    return [d for d in report["diagnostics"] if d.get("metric") in MODULE_METRICS]


# ---------------------------------------------------------------------------------------------------------------
# A hyperparameter that holds a value outside the family: read while the crawl is built, the real one in the
# forward (a pre-hook of the test switches it), so the forward runs as PyTorch's.
# ---------------------------------------------------------------------------------------------------------------

ODD = {"on": False}


def _odd_class(cls: type, name: str, odd):
    def get(self):
        return odd if ODD["on"] else self.__dict__["_extb_" + name]

    def put(self, value):
        self.__dict__["_extb_" + name] = value

    return type("Odd" + cls.__name__, (cls,), {name: property(get, put)})


REFUSALS = [
    (nn.GELU, (), "approximate", "sigmoid", (2, 4), "GELU approximate must be 'none' or 'tanh'"),
    (nn.Upsample, (None, 2), "mode", "cubic-ish", (1, 2, 3), "Upsample mode is not a known interpolation"),
    (nn.GRU, (3, 4), "mode", "QRNN", (5, 1, 3), "RNN mode is not RNN_TANH, RNN_RELU, LSTM or GRU"),
    (nn.RNNCell, (3, 4), "nonlinearity", "sigmoid", (2, 3), "RNNCell nonlinearity is not tanh or relu"),
]


@pytest.mark.parametrize("cls,ctor,name,odd,shape,reason", REFUSALS, ids=[r[0].__name__ for r in REFUSALS])
def test_an_unknown_choice_is_refused_with_its_reason(cls, ctor, name, odd, shape, reason):
    module = _odd_class(cls, name, odd)(*ctor).eval()
    module.register_forward_pre_hook(lambda mod, args: ODD.update(on=False))
    ODD["on"] = True
    try:
        report = crawl_module(module, args=(rand(*shape),))
    finally:
        ODD["on"] = False
    errors = module_errors(report)
    assert {d["code"] for d in errors} == {"module_metric_error"}
    assert all(reason in d["message"] for d in errors), errors
    assert {d["metric"] for d in errors} == set(MODULE_METRICS)
    assert report["totals"]["module_flops"]["status"] == "unavailable"  # its only module refused


def test_embedding_bag_unknown_mode_is_refused():
    # an EmbeddingBag whose mode is unknown to the family (read at build; the forward sees "mean")
    module = _odd_class(nn.EmbeddingBag, "mode", "median")(10, 3, mode="mean").eval()
    module.register_forward_pre_hook(lambda mod, args: ODD.update(on=False))
    ODD["on"] = True
    try:
        report = crawl_module(module, args=(torch.tensor([[1, 2, 3], [4, 5, 6]]),))
    finally:
        ODD["on"] = False
    assert {d["code"] for d in module_errors(report)} == {"module_metric_error"}
    assert all("EmbeddingBag mode must be sum, mean or max" in d["message"] for d in module_errors(report))


def test_embedding_max_norm_is_refused():
    # max_norm renormalizes the looked-up rows in place: value-dependent work, no formula
    report = crawl_module(nn.Embedding(10, 3, max_norm=1.0), args=(torch.tensor([[1, 2], [3, 4]]),))
    errors = module_errors(report)
    assert {d["code"] for d in errors} == {"module_metric_error"}
    assert all("Embedding with max_norm renormalizes rows" in d["message"] for d in errors)
    # without max_norm: a lookup, 0 FLOPs; DMAs = indices 4 + rows read 4*3 + output 12 (module-formulas.md)
    plain = counts(crawl_module(nn.Embedding(10, 3), args=(torch.tensor([[1, 2], [3, 4]]),)))
    assert plain[:2] == (0, 0)


# ---------------------------------------------------------------------------------------------------------------
# Shapes and paddings the readers reject or normalize
# ---------------------------------------------------------------------------------------------------------------


def test_normalized_shape_of_more_than_max_dims_has_no_formula():
    # TS_MAX_DIMS is 12: the reader refuses a LayerNorm over 13 dims (ValueError in the reader: no formula,
    # "unsupported", before any shape of the call is looked at)
    report = crawl_module(nn.LayerNorm((1,) * 13), args=(torch.ones((1,) * 13),))
    assert _root(report)["metrics"]["module_flops"]["status"] != "complete"
    codes = {d["code"] for d in report["diagnostics"] if d.get("metric") in MODULE_METRICS}
    assert codes == {"unsupported_module_metric"}
    # 12 dims is within the limit: N = 1, R = 1, affine A = 2: 6N + 2R + AN = 10 FLOPs
    ok = crawl_module(nn.LayerNorm((1,) * 12), args=(torch.ones((1,) * 12),))
    assert _root(ok)["metrics"]["module_flops"]["value"] == 10
    # 11 normalized dims of a (2,1,...) input: N = 2, R = 2: 12 + 4 + 4 = 20
    ok = crawl_module(nn.LayerNorm((1,) * 11), args=(torch.ones((2,) + (1,) * 11),))
    assert _root(ok)["metrics"]["module_flops"]["value"] == 20


def test_a_constant_pad_with_more_than_six_values_has_no_formula():
    module = nn.ConstantPad3d(1, 0.5)
    module.padding = (1, 0) * 4  # F.pad takes it (4 trailing dims); the family reads up to 3 dims
    x = torch.ones(1, 2, 2, 2, 2)
    report = crawl_module(module, args=(x,))
    assert module(x).shape == (1, 3, 3, 3, 3)
    assert _root(report)["metrics"]["module_flops"]["status"] != "complete"
    assert ("unsupported_module_metric", "") in {(d["code"], d.get("path")) for d in report["diagnostics"]}


def test_padding_valid_reads_as_zero_padding():
    x = rand(1, 2, 7)
    torch.manual_seed(0)
    valid = nn.Conv1d(2, 3, 3, padding="valid", dilation=2)
    torch.manual_seed(0)
    zero = nn.Conv1d(2, 3, 3, padding=0, dilation=2)
    # output length 7 - 2*(3-1) = 3, O = 9: MACs = O * Cin * K = 9 * 2 * 3 = 54
    assert counts(crawl_module(valid, args=(x,))) == counts(crawl_module(zero, args=(x,)))
    assert counts(crawl_module(valid, args=(x,)))[1] == 54


def test_lppool_with_an_explicit_stride():
    # LPPool1d(2, kernel 2, stride 1) on (1,2,6): length 5, O = 10, K = 2:
    # FLOPs O*2K = 40, MACs O*(K-1) = 10, DMAs O*(K+1) = 30
    report = crawl_module(nn.LPPool1d(2, 2, stride=1), args=(rand(1, 2, 6),))
    assert counts(report) == (40, 10, 30)
    # stride None = kernel: length 3, O = 6: 24, 6, 18
    assert counts(crawl_module(nn.LPPool1d(2, 2), args=(rand(1, 2, 6),))) == (24, 6, 18)


# ---------------------------------------------------------------------------------------------------------------
# Transformer families: sub-layers, activations, stacks, final norms
# ---------------------------------------------------------------------------------------------------------------


class Doubling(nn.Module):
    def forward(self, x, *args, **kwargs):
        return x * 2


def _src():
    return rand(3, 1, 4)


def test_a_non_native_sublayer_refuses_the_layer():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
    layer.dropout1 = Doubling()  # not a Dropout: outside the family
    errors = module_errors(crawl_module(layer, args=(_src(),)))
    assert {d["code"] for d in errors} == {"module_metric_error"}
    assert all("need native sub-layers" in d["message"] for d in errors)


@pytest.mark.parametrize(
    "activation,refused",
    [(nn.ReLU(), False), (nn.GELU(), False), (nn.GELU("tanh"), True), (nn.Tanh(), True), (Doubling(), True)],
    ids=["relu-module", "gelu-module", "gelu-tanh", "tanh", "custom"],
)
def test_the_encoder_layer_activation(activation, refused):
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=activation).eval()
    report = crawl_module(layer, args=(_src(),))
    errors = module_errors(report)
    if refused:
        assert {d["code"] for d in errors} == {"module_metric_error"}
        assert all("ReLU or exact GELU" in d["message"] for d in errors)
    else:
        assert errors == []
        # the functional activation of the same kind counts the same
        functional = "relu" if isinstance(activation, nn.ReLU) else "gelu"
        ref = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=functional).eval()
        assert counts(report) == counts(crawl_module(ref, args=(_src(),)))


def test_a_stack_whose_layers_are_not_a_module_list():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    ref = counts(crawl_module(encoder, args=(_src(),)))
    encoder.layers = nn.Sequential(*encoder.layers)  # iterated as a sequence: the same two layers
    assert counts(crawl_module(encoder, args=(_src(),))) == ref


def test_a_stack_with_a_foreign_layer_or_final_norm_is_refused():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    encoder.layers[1] = Doubling()
    errors = module_errors(crawl_module(encoder, args=(_src(),)))
    assert errors and all("need native sub-layers" in d["message"] for d in errors)

    encoder = nn.TransformerEncoder(layer, 1, norm=nn.RMSNorm(4), enable_nested_tensor=False).eval()
    errors = module_errors(crawl_module(encoder, args=(_src(),)))
    assert errors and all("LayerNorm, Identity or None final norms" in d["message"] for d in errors)

    # a refused layer passes its reason on to the stack
    refused = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=nn.Tanh())
    encoder = nn.TransformerEncoder(refused, 1, enable_nested_tensor=False).eval()
    encoder.layers[0].activation = nn.Tanh()
    errors = module_errors(crawl_module(encoder, args=(_src(),)))
    assert errors and all("ReLU or exact GELU" in d["message"] for d in errors)


def test_stacked_layers_in_different_modes_are_refused():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    ref = counts(crawl_module(encoder, args=(_src(),)))
    # a pre-hook switches the second layer's dropout1 to training for the call (p = 0 changes no value, but
    # the layers' modes differ, and one layer description serves the stack)
    hook = encoder.register_forward_pre_hook(lambda mod, args: mod.layers[1].dropout1.train() and None)
    errors = module_errors(crawl_module(encoder, args=(_src(),)))
    assert errors and all("same modes" in d["message"] for d in errors)
    # the modes are read afresh at each call: alike again, the same counts again
    hook.remove()
    encoder.layers[1].dropout1.eval()
    assert counts(crawl_module(encoder, args=(_src(),))) == ref


def test_a_decoder_stack_without_final_norm():
    tgt, memory = rand(2, 1, 4), rand(3, 1, 4)
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0)
    decoder = nn.TransformerDecoder(layer, 1).eval()
    assert decoder.norm is None
    # one decoder layer and no final norm: the stack counts its one layer
    assert counts(crawl_module(decoder, args=(tgt, memory))) == counts(
        crawl_module(decoder.layers[0], args=(tgt, memory))
    )


def test_a_patched_forward_is_refused():
    layer = nn.Linear(4, 3)
    native = crawl_module(layer, args=(rand(2, 4),))
    layer.forward = lambda x: nn.functional.linear(x, layer.weight, layer.bias) * 1
    report = crawl_module(layer, args=(rand(2, 4),))
    assert "module_flops" not in _root(report)["metrics"] or (
        _root(report)["metrics"]["module_flops"]["status"] != "complete"
    )
    assert _root(native)["metrics"]["module_flops"]["status"] == "complete"


def test_a_sublayer_with_a_patched_forward_passes_its_refusal_on():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
    layer.dropout1.forward = lambda x: x  # an instance forward: not the native Dropout's
    errors = module_errors(crawl_module(layer, args=(_src(),)))
    assert errors and all(
        d["message"] == "NotImplementedError: its forward is not the native class's, which the formula describes"
        for d in errors
    )


def test_a_stack_without_layers_outside_a_crawl():
    # an empty stack cannot run, but its formulas can be asked for: they refuse it
    from torchscan.modules import module_flops

    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 1, enable_nested_tensor=False).eval()
    x = _src()
    with torch.no_grad():
        out = encoder(x)
    encoder.layers = nn.ModuleList()
    with pytest.raises(NotImplementedError, match="Transformer estimates need at least one layer"):
        module_flops(encoder, (x,), out)


def test_an_activation_module_refused_by_its_own_reader():
    # an nn.GELU whose approximate is unknown to the family (read at build; the forward sees "none")
    gelu = _odd_class(nn.GELU, "approximate", "sigmoid")()
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=gelu).eval()
    layer.register_forward_pre_hook(lambda mod, args: ODD.update(on=False))
    ODD["on"] = True
    try:
        errors = module_errors(crawl_module(layer, args=(_src(),)))
    finally:
        ODD["on"] = False
    assert errors and all("ReLU or exact GELU" in d["message"] for d in errors)


class _TwoCalls(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.calls = 0

        def first_call_mixed(mod, args):
            # the first call runs the second layer's dropout1 in training (p = 0: same values), the second not
            self.calls += 1
            mod.layers[1].dropout1.train(self.calls == 1)

        self.enc.register_forward_pre_hook(first_call_mixed)

    def forward(self, x):
        return self.enc(self.enc(x))


def test_a_modes_refusal_is_read_afresh_at_the_next_call():
    model = _TwoCalls().eval()
    report = crawl_module(model, args=(_src(),))
    rows = {layer["call_index"]: layer for layer in report["layers"] if layer["path"] == "enc"}
    first, second = rows[0]["metrics"], rows[1]["metrics"]
    assert first["module_flops"]["status"] == "unavailable"
    module_messages = [d["message"] for d in module_errors(report) if d["path"] == "enc"]
    assert len(module_messages) == 3 and all("same modes" in m for m in module_messages)  # the first call's only
    # the second call's layers are alike again: two layers of 1224 FLOPs (the documented worked example)
    assert (second["module_flops"]["status"], second["module_flops"]["value"]) == ("complete", 2 * 1224)


def test_a_scripted_sublayer_is_not_native():
    # a ScriptModule keeps its tensors and children in mappings of its own: its parameters still count
    # (172 for TransformerEncoderLayer(4, 2, 8)), but it is not the native Linear the formula describes
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
    layer.linear1 = torch.jit.script(layer.linear1)
    report = crawl_module(layer, args=(_src(),))
    assert report["totals"]["parameters"]["value"] == 172
    errors = module_errors(report)
    assert errors and all("need native sub-layers" in d["message"] for d in errors)
