"""torchscan.modules (``_engine.module_estimates``) on calls outside a crawl (extb).

The module's own training flag decides the modes (a crawl runs in eval mode), real-valued estimates come back
as floats, and a module reader's failure outside a crawl is the caller's exception. Numbers carry their hand
arithmetic from docs/module-formulas.md (N input, O output elements).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import _engine
from torchscan.modules import module_dmas, module_flops, module_macs, module_rf


def rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


def test_conv_transpose_has_a_fractional_stride():
    # ConvTranspose2d(1, 1, 3, stride=2) on (1,1,4,4): N 16, O 9*9 = 81.
    # FLOPs 2*N*Cout*k^2 + O (bias) = 288 + 81 = 369; MACs N*Cout*k^2 = 144; rf (-k, 1/s, 0)
    module = nn.ConvTranspose2d(1, 1, 3, stride=2)
    x = rand(1, 1, 4, 4)
    out = module(x)
    assert module_flops(module, (x,), out) == 369
    assert module_macs(module, x, out) == 144
    rf = module_rf(module, x, out)
    assert rf == (-3.0, 0.5, 0.0)
    assert isinstance(_engine.module_estimates(module, (x,), {}, out)["effective_stride"][1], float)


def _encoder_layer_call(train: bool):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = rand(3, 1, 4)
    with torch.no_grad():
        out = layer.eval()(x)
    layer.train(train)
    return layer, x, out


def test_an_encoder_layer_counts_its_dropouts_in_training():
    # eval: 1224 (docs/module-formulas.md's worked example); training adds 2 FLOPs per element of each dropout
    # that runs: attention scores 18, F-dropout on 24 hidden elements, dropout1/2 on 12: 2*(18+24+12+12) = 132
    layer, x, out = _encoder_layer_call(False)
    assert module_flops(layer, (x,), out) == 1224
    assert module_macs(layer, x, out) == 504
    layer, x, out = _encoder_layer_call(True)
    assert module_flops(layer, (x,), out) == 1224 + 132
    # MACs and DMAs are defined in eval mode
    with pytest.raises(NotImplementedError, match="defined in eval mode"):
        module_macs(layer, x, out)


def test_an_encoder_stack_reads_each_layers_modes():
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5), 1, nn.LayerNorm(4))
    x = rand(3, 1, 4)
    with torch.no_grad():
        out = encoder.eval()(x)
    # the layer 1224 + the final LayerNorm on N 12, R 3: 6N + 2R + 2N = 102
    assert module_flops(encoder, (x,), out) == 1326
    encoder.train()
    assert module_flops(encoder, (x,), out) == 1326 + 132
    encoder.layers[0].dropout1.eval()  # one dropout (12 elements) back in eval: 24 FLOPs less
    assert module_flops(encoder, (x,), out) == 1326 + 132 - 24


def test_a_transformer_counts_both_stacks_modes():
    # nn.Transformer(4, 2, 1, 1, 8): 2694 FLOPs, 1088 MACs, 2144 DMAs in eval (test_module_families pins them);
    # in training all 252 dropout FLOPs (test_module_families' MC dropout arithmetic)
    torch.manual_seed(0)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.5)
    src, tgt = rand(3, 1, 4), rand(2, 1, 4)
    with torch.no_grad():
        out = model.eval()(src, tgt)
    assert (module_flops(model, (src, tgt), out), module_macs(model, (src, tgt), out)) == (2694, 1088)
    assert module_dmas(model, (src, tgt), out) == 2144
    model.train()
    assert module_flops(model, (src, tgt), out) == 2694 + 252


class _BrokenTraining(nn.ReLU):
    @property
    def training(self):
        raise ValueError("broken training flag")

    @training.setter
    def training(self, value):
        self.__dict__["_training"] = value


def test_a_training_flag_that_raises_is_the_callers_exception():
    module = _BrokenTraining()
    x = rand(2, 4)
    with pytest.raises(ValueError, match="broken training flag"):
        module_flops(module, (x,), torch.relu(x))


def test_module_estimates_argument_types():
    module, x = nn.ReLU(), rand(2, 4)
    with pytest.raises(TypeError, match="argument 2 must be tuple, not list"):
        _engine.module_estimates(module, [x], {}, x)
    with pytest.raises(TypeError, match="argument 3 must be dict, not tuple"):
        _engine.module_estimates(module, (x,), (), x)
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, not int"):
        module_flops(3, (x,), x)
    # no output tensor: None from the engine, ValueError from the skin
    assert _engine.module_estimates(module, (x,), {}, 4) is None
    with pytest.raises(ValueError, match="did not expose both an input and output tensor"):
        module_dmas(module, x, 4)
    # ReLU on N 8: FLOPs N, DMAs N + O = 16
    assert (module_flops(module, (x,), torch.relu(x)), module_dmas(module, x, torch.relu(x))) == (8, 16)


class _NumelRefused(nn.Parameter):
    def numel(self):
        raise RuntimeError("numel refused")


class _NumelInterrupts(nn.Parameter):
    def numel(self):
        raise KeyboardInterrupt


def test_parameters_that_cannot_be_counted_read_as_lazy():
    # Linear(4, 3) on (2, 4): DMAs N + P + O = 8 + 15 + 6 = 29. A weight whose numel() raises makes the
    # module's parameters uncountable: counted as a lazy module's, P = 0 (8 + 6 = 14); FLOPs do not read P
    module, x = nn.Linear(4, 3), rand(2, 4)
    out = module(x)
    assert (module_flops(module, (x,), out), module_dmas(module, x, out)) == (48, 29)
    module.weight = _NumelRefused(module.weight.detach())
    assert (module_flops(module, (x,), out), module_dmas(module, x, out)) == (48, 14)
    # an interrupt is not the module's failure: it propagates
    module.weight = _NumelInterrupts(module.weight.detach())
    with pytest.raises(KeyboardInterrupt):
        module_dmas(module, x, out)


def test_a_stack_whose_layers_are_one_module():
    # TransformerEncoderLayer(4, 2, 8): MHA 48 + 12 + 16 + 4, linear1 32 + 8, linear2 32 + 4, norms 16 = 172.
    # Two distinct layers: 344 parameters; the same layer twice: 172, while the work stays two layer calls
    # (2 * 1224 FLOPs, docs/module-formulas.md's worked example)
    from torchscan import crawl_module

    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), 2, enable_nested_tensor=False)
    encoder.eval()
    x = rand(3, 1, 4)
    two = crawl_module(encoder, args=(x,))
    encoder.layers[1] = encoder.layers[0]
    tied = crawl_module(encoder, args=(x,))
    assert (two["totals"]["parameters"]["value"], tied["totals"]["parameters"]["value"]) == (344, 172)
    for report in (two, tied):
        metrics = report["layers"][0]["metrics"]
        assert metrics["module_flops"]["value"] == 2 * 1224
    assert tied["layers"][0]["metrics"]["dmas"]["value"] == two["layers"][0]["metrics"]["dmas"]["value"]
