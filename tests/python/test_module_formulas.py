"""Module-formula rows checked by hand arithmetic (contract 2.1), and their operator counterparts."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module


def _values(report, index=0):
    return {name: metric["value"] for name, metric in report["layers"][index]["metrics"].items()}


def test_conv2d_pinned():
    report = crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32))
    # O = 8*30*30 = 7200; FLOPs O*(2*3*9 - 1 + 1) = 388,800; MACs O*27 = 194,400;
    # DMAs Cin*K*O/groups + P + O = 27*7200 + 224 + 7200 = 201,824; rf (3, 1, 0)
    assert _values(report) == {
        "calls": 1,
        "module_flops": 388_800,
        "macs": 194_400,
        "dmas": 201_824,
        "receptive_field": 3,
        "effective_stride": 1,
        "effective_padding": 0,
        "operator_flops": 388_800,  # the call's own aten.convolution: 2*1*8*27*900
    }
    assert report["layers"][0]["output"]["shape"] == [1, 8, 30, 30]
    assert report["totals"]["parameters"]["value"] == 224


def test_linear():
    report = crawl_module(nn.Linear(5, 3), (2, 5))
    # input (1, 2, 5): N = 10, O = 6, P = 18; FLOPs O*(2*5 - 1) + O = 60; MACs in*O = 30; DMAs N + P + O = 34
    values = _values(report)
    assert (values["module_flops"], values["macs"], values["dmas"]) == (60, 30, 34)
    assert (values["receptive_field"], values["effective_stride"], values["effective_padding"]) == (1, 1, 0)


def test_batchnorm_eval_module_and_operator():
    bn = nn.BatchNorm2d(4)
    report = crawl_module(bn, (4, 4, 4))
    # eval: N = 64, C = 4, A = 2 affine tensors: 2N + 2C + A*N = 128 + 8 + 128 = 264
    assert report["layers"][0]["metrics"]["module_flops"]["value"] == 264
    # MACs N*(1 + [affine]) = 128
    assert report["layers"][0]["metrics"]["macs"]["value"] == 128
    # the operator formula uses the same eval convention (contract 2.2)
    assert report["operator_flops"]["by_operator"] == {"aten.native_batch_norm": 264}
    assert bn.training  # restored


def test_layernorm():
    report = crawl_module(nn.LayerNorm(8), (3, 8))
    # N = 24, R = 3 rows, A = 2: 6N + 2R + A*N = 144 + 6 + 48 = 198; MACs N*(1 + W) = 48
    values = _values(report)
    assert values["module_flops"] == 198 and values["macs"] == 48
    # DMAs 4N + 5R + 1 + P + 2N (weight) = 96 + 15 + 1 + 16 + 48 = 176
    assert values["dmas"] == 176
    assert report["operator_flops"]["by_operator"] == {"aten.native_layer_norm": 198}
    # LayerNorm has no grid window: like GroupNorm and RMSNorm the trio is not applicable, with no diagnostic
    # (v0.2 said "not supported"; the newest handling is unknown, docs/module-formulas.md)
    assert report["diagnostics"] == []
    rf = report["layers"][0]["metrics"]["receptive_field"]
    assert rf["status"] == "unavailable" and rf["method"] == "torchscan_module_formula:not_applicable"


def test_unbatched_maxpool_with_indices():
    report = crawl_module(nn.MaxPool2d((2,), return_indices=True), args=(torch.rand(2, 4, 4),))
    # K = 2^2 = 4, O = 2*2*2 = 8: FLOPs O*(K-1) = 24, MACs 24, DMAs O*(K + 1 + 1) = 48
    values = _values(report)
    assert (values["module_flops"], values["macs"], values["dmas"]) == (24, 24, 48)
    assert report["operator_flops"]["by_operator"] == {"aten.max_pool2d_with_indices": 24}
    assert report["layers"][0]["output"]["kind"] == "tuple"


def test_adaptive_avg_pool_visits():
    report = crawl_module(nn.AdaptiveAvgPool1d(3), (2, 5))
    # windows of 5 -> 3: [0,2), [1,4), [3,5) = 2 + 3 + 2 = 7 = 5 + 3 - gcd(5, 3); 2 channels: 14 visits
    values = _values(report)
    assert values["module_flops"] == 14
    assert values["dmas"] == 14 + 6  # visits + O
    assert report["operator_flops"]["by_operator"] == {"aten._adaptive_avg_pool2d": 14}


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention(need_weights):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    q = torch.rand(3, 1, 4)  # (T, B, E) = (3, 1, 4), H = 2, D = 2
    report = crawl_module(mha, args=(q, q, q), kwargs={"need_weights": need_weights})
    values = _values(report)
    # q, k, v projections 3 * [rows 3 * E 4 * (2*4 - 1 + 1)] = 288; scale B*H*T*D = 12;
    # QK^T B*H*T*S*(2D - 1) = 54; softmax B*H*T*(5S - 2) = 78; weights@V B*H*T*D*(2S - 1) = 60;
    # out_proj 12 outputs * 8 = 96 -> 588; averaged weights returned: + B*H*T*S = 18
    assert values["module_flops"] == 588 + (18 if need_weights else 0)
    # MACs 2*B*T*E^2 + B*S*E*(kdim + vdim) + 2*B*T*S*E = 96 + 96 + 72
    assert values["macs"] == 264
    # DMAs I + P + 7Q + 4J + 10A' + 4R = 36 + 80 + 84 + 48 + 180 + 24 = 452; weights: + A' + B*T*S = 27
    assert values["dmas"] == 452 + (27 if need_weights else 0)
    for name in ("receptive_field", "effective_stride", "effective_padding"):
        assert report["layers"][0]["metrics"][name]["status"] == "unavailable"
    assert report["diagnostics"] == []  # "not applicable" is not a diagnostic
    if not need_weights:
        # operators: in_proj (3,4)@(4,12) 288 + out_proj 96 = 384 addmm; the SDPA call (CPU kernel) by the
        # attention convention: rows 6, scores 18, D 2: 2*18*4 + 18 + 5*18 - 12 = 240
        assert report["operator_flops"]["by_operator"] == {
            "aten.scaled_dot_product_attention": 240,
            "aten.addmm": 384,
        }


def test_activations():
    x_shape = (2, 5)  # N = 10
    cases = {
        nn.ReLU(): (10, 0, 20),  # N ; 0 ; N + O
        nn.ReLU6(): (20, 0, 20),  # 2N
        nn.Sigmoid(): (40, 0, 20),  # 4N
        nn.Tanh(): (60, 0, 30),  # 6N ; DMAs 2N + O
        nn.LeakyReLU(): (40, 0, 21),  # 4N ; N + 1 + O
        nn.ELU(): (60, 0, 21),  # 6N ; N + 1 + O
        nn.Identity(): (0, 0, 10),
        nn.Flatten(): (0, 0, 20),
        nn.Dropout(0.3): (0, 0, 21),  # eval: 0 FLOPs ; N + 1 + O
    }
    for module, (flops, macs, dmas) in cases.items():
        values = _values(crawl_module(module, x_shape))
        assert (values["module_flops"], values["macs"], values["dmas"]) == (flops, macs, dmas), type(module).__name__


def test_conv_transpose_dense_scatter():
    report = crawl_module(nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), (4, 5, 5))
    # N = 100 inputs; 2*N*(Cout/groups)*K + O*[bias] = 2*100*3*9 + 6*11*11 = 5400 + 726 = 6126
    values = _values(report)
    assert values["module_flops"] == 6126
    assert values["macs"] == 100 * 3 * 9
    assert report["layers"][0]["output"]["shape"] == [1, 6, 11, 11]
    # receptive field of an upsampling layer: negative window, fractional stride
    assert values["receptive_field"] == -3 and values["effective_stride"] == 0.5


def test_complex_input_is_a_module_metric_error():
    report = crawl_module(nn.Linear(4, 2, dtype=torch.complex64), (4,))
    assert report["inputs"]["args"][0]["dtype"] == "torch.complex64"
    metric = report["layers"][0]["metrics"]["module_flops"]
    assert metric["status"] == "unavailable"
    errors = [d for d in report["diagnostics"] if d["code"] == "module_metric_error"]
    assert {d["metric"] for d in errors} >= {"module_flops"}
    assert all(d["message"].startswith("NotImplementedError: ") for d in errors)
