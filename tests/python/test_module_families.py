"""Module formulas of every standard torch.nn family, crawled on real modules (contract 2.1, SPEC 3.4).

Each expected number carries its hand arithmetic (N = input elements, O = output elements, P = parameter
elements, R = rows). The C unit tests (tests/c/test_module_formulas.c) pin the same conventions on
hand-built descriptions; here the binding's hyperparameter reads and call filling are exercised on real
modules. docs/module-formulas.md is checked against the C tables at the end.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import zoo
from conftest import assert_flopcounter_parity, flopcounter_counts
from torchscan import IncompleteAnalysisError, crawl_module, metric_result

ROOT = Path(__file__).resolve().parents[2]
MODULE_METRICS = {"module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"}


def counts(report, index=0):
    """(FLOPs, MACs, DMAs) of one layer row, asserting each is complete."""
    metrics = report["layers"][index]["metrics"]
    for name in ("module_flops", "macs", "dmas"):
        assert metrics[name]["status"] == "complete", (name, metrics[name], report["diagnostics"])
    return tuple(metrics[name]["value"] for name in ("module_flops", "macs", "dmas"))


def trio(report, index=0):
    metrics = report["layers"][index]["metrics"]
    names = ("receptive_field", "effective_stride", "effective_padding")
    if metrics["receptive_field"]["status"] == "unavailable":
        # native Transformer rows own their subtree: method "not_applicable", scope "subtree" (contract 1.10);
        # other families: "torchscan_module_formula:not_applicable" for the call
        owned = metrics["receptive_field"]["scope"] == "subtree"
        method = "not_applicable" if owned else "torchscan_module_formula:not_applicable"
        assert all(metrics[n]["method"] == method for n in names)
        return "n/a"
    return tuple(metrics[n]["value"] for n in names)


def module_diagnostics(report):
    return [d for d in report["diagnostics"] if d.get("metric") in MODULE_METRICS]


def rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------------------------------------------
# One real module per family, with its hand-derived counts
# ---------------------------------------------------------------------------------------------------------------

X24 = (2, 4)  # the contract's activation input: N = O = 8, R = 2

CASES = [
    # --- newer pointwise activations (contract table, (2,4) input): FLOPs cost*N, MACs 0, DMAs N + O ---
    ("Hardtanh", nn.Hardtanh(), X24, (16, 0, 16), (1, 1, 0)),
    ("Threshold", nn.Threshold(0.1, 0.0), X24, (16, 0, 16), (1, 1, 0)),
    ("Hardshrink", nn.Hardshrink(), X24, (24, 0, 16), (1, 1, 0)),
    ("Softsign", nn.Softsign(), X24, (24, 0, 16), (1, 1, 0)),
    ("Hardsigmoid", nn.Hardsigmoid(), X24, (32, 0, 16), (1, 1, 0)),
    ("PReLU", nn.PReLU(), X24, (32, 0, 17), (1, 1, 0)),  # + its one weight read
    ("RReLU", nn.RReLU(), X24, (32, 0, 16), (1, 1, 0)),  # eval
    ("Hardswish", nn.Hardswish(), X24, (40, 0, 16), (1, 1, 0)),
    ("Softshrink", nn.Softshrink(), X24, (40, 0, 16), (1, 1, 0)),
    ("CELU", nn.CELU(), X24, (56, 0, 16), (1, 1, 0)),
    ("SELU", nn.SELU(), X24, (56, 0, 16), (1, 1, 0)),
    ("LogSigmoid", nn.LogSigmoid(), X24, (56, 0, 16), (1, 1, 0)),
    ("Softplus", nn.Softplus(), X24, (56, 0, 16), (1, 1, 0)),
    ("Tanhshrink", nn.Tanhshrink(), X24, (56, 0, 16), (1, 1, 0)),
    ("Mish", nn.Mish(), X24, (80, 0, 16), (1, 1, 0)),
    ("Hardtanh-inplace", nn.Hardtanh(inplace=True), X24, (16, 0, 16), (1, 1, 0)),  # in place still writes
    ("GELU", nn.GELU(), X24, (40, 0, 16), (1, 1, 0)),  # 5N
    ("GELU-tanh", nn.GELU("tanh"), X24, (112, 0, 16), (1, 1, 0)),  # 14N
    ("SiLU", nn.SiLU(), X24, (40, 0, 16), (1, 1, 0)),  # 5N
    ("GLU", nn.GLU(), X24, (20, 0, 12), "n/a"),  # (2,4) -> (2,2): 5*O = 20; N + O = 12
    # --- Softmax family on (2,4) over dim -1: R = 2 ---
    ("Softmax", nn.Softmax(-1), X24, (36, 0, 72), (1, 1, 0)),  # 5N - 2R; 8N + 4R
    ("LogSoftmax", nn.LogSoftmax(-1), X24, (30, 0, 76), (1, 1, 0)),  # 4N - R; 8N + 6R
    ("Softmin", nn.Softmin(-1), X24, (44, 0, 88), (1, 1, 0)),  # N + 5N - 2R; 10N + 4R
    ("Softmax2d", nn.Softmax2d(), (4, 2, 2), (72, 0, 144), (1, 1, 0)),  # (1,4,2,2): N 16, R 4
    # --- norms ---
    # GroupNorm(2, 4) on (1,4,3): N 12, R = B*groups 2: (6+2)N + 2R = 100; N(1+W) 24; 4N+5R+1+P+2N = 91
    ("GroupNorm", nn.GroupNorm(2, 4), (4, 3), (100, 24, 91), "n/a"),
    # RMSNorm(4) on (1,3,4): N 12, R 3: (3+1)N + 2R = 54; 24; 3N + 4R + 1 + (2N + P) = 36 + 12 + 1 + 28 = 77
    ("RMSNorm", nn.RMSNorm(4), (3, 4), (54, 24, 77), "n/a"),
    # InstanceNorm2d(4, affine) on (1,4,3,3): N 36, R = B*C 4, A 2: 2N + 2R + AN + 4N = 296; 72;
    # 4N + 5R + 1 + P + 2N = 144 + 20 + 1 + 8 + 72 = 245
    ("InstanceNorm2d", nn.InstanceNorm2d(4, affine=True), (4, 3, 3), (296, 72, 245), "n/a"),
    # InstanceNorm1d(4) on (1,4,5): N 20, R 4: 2N + 2R + 4N = 128; 20; 80 + 20 + 1 = 101
    ("InstanceNorm1d", nn.InstanceNorm1d(4), (4, 5), (128, 20, 101), "n/a"),
    # InstanceNorm3d(2, track_running_stats) in eval uses running stats: N 16, R 2: 2N + 2R = 36; 16;
    # BatchNorm eval traffic N + 1 + 2C + [momentum] + O = 16 + 1 + 4 + 1 + 16 = 38
    ("InstanceNorm3d", nn.InstanceNorm3d(2, track_running_stats=True), (2, 2, 2, 2), (36, 16, 38), "n/a"),
    # LocalResponseNorm(2) on (1,4,3,3): (size + 5)N = 252; size*N = 72; (size + 1)N + O = 144
    ("LocalResponseNorm", nn.LocalResponseNorm(2), (4, 3, 3), (252, 72, 144), (1, 1, 0)),
    # --- layout ---
    ("Unflatten", nn.Unflatten(1, (2, 2)), (4,), (0, 0, 0), "n/a"),
    ("PixelShuffle", nn.PixelShuffle(2), (4, 2, 2), (0, 0, 32), "n/a"),  # O 16: 2O
    ("PixelUnshuffle", nn.PixelUnshuffle(2), (1, 4, 4), (0, 0, 32), "n/a"),
    ("ChannelShuffle", nn.ChannelShuffle(2), (4, 2, 2), (0, 0, 32), "n/a"),
    ("Unfold", nn.Unfold(2), (2, 3, 3), (0, 0, 64), "n/a"),  # (1,8,4): O 32
    # Fold((3,3), 2) on (1,8,4) -> (1,2,3,3): contributions per axis 1,2,1 (sum 4, 3 covered):
    # 2 channels * (4*4 - 3*3) = 14 adds (MACs the same); N + O = 32 + 18 = 50
    ("Fold", nn.Fold((3, 3), 2), (8, 4), (14, 14, 50), "n/a"),
    # --- upsampling, (1,2,3,3) -> (1,2,6,6): O = 72 ---
    ("Upsample-nearest", nn.Upsample(scale_factor=2), (2, 3, 3), (0, 0, 144), "n/a"),
    ("Upsample-nearest-exact", nn.Upsample(scale_factor=2, mode="nearest-exact"), (2, 3, 3), (0, 0, 144), "n/a"),
    ("Upsample-bilinear", nn.Upsample(scale_factor=2, mode="bilinear"), (2, 3, 3), (504, 288, 360), "n/a"),
    ("Upsample-bicubic", nn.Upsample(scale_factor=2, mode="bicubic"), (2, 3, 3), (2232, 1152, 1224), "n/a"),
    ("UpsamplingNearest2d", nn.UpsamplingNearest2d(scale_factor=2), (2, 3, 3), (0, 0, 144), "n/a"),
    ("UpsamplingBilinear2d", nn.UpsamplingBilinear2d(scale_factor=2), (2, 3, 3), (504, 288, 360), "n/a"),
    ("Upsample-linear", nn.Upsample(scale_factor=2, mode="linear"), (2, 3), (36, 24, 36), "n/a"),  # O 12, n 2
    # trilinear (1,2,3,3,3) -> (1,2,6,6,6): O 432, n 8: 15*O, 8*O, 9*O
    ("Upsample-trilinear", nn.Upsample(scale_factor=2, mode="trilinear"), (2, 3, 3, 3), (6480, 3456, 3888), "n/a"),
    # area (1,2,5,7) -> (1,2,3,2): adaptive visits 2*7*8 = 112, O 12: 112, 112 + 12, 112 + 12
    ("Upsample-area", nn.Upsample(size=(3, 2), mode="area"), (2, 5, 7), (112, 124, 124), "n/a"),
    # --- dropout variants: eval 0 FLOPs, DMAs N + 1 + O ---
    ("Dropout1d", nn.Dropout1d(), (2, 3), (0, 0, 13), (1, 1, 0)),
    ("Dropout2d", nn.Dropout2d(), (2, 3, 3), (0, 0, 37), (1, 1, 0)),
    ("Dropout3d", nn.Dropout3d(), (2, 2, 2, 2), (0, 0, 33), (1, 1, 0)),
    ("AlphaDropout", nn.AlphaDropout(), (2, 3), (0, 0, 13), (1, 1, 0)),
    ("FeatureAlphaDropout", nn.FeatureAlphaDropout(), (2, 3, 3), (0, 0, 37), (1, 1, 0)),
    # --- LP pooling: 2K per output, K - 1 MACs, K + 1 DMAs ---
    ("LPPool1d", nn.LPPool1d(3, 2), (2, 4), (16, 4, 12), (2, 2, 0)),  # O 4, K 2
    ("LPPool2d", nn.LPPool2d(2, 2), (2, 4, 4), (64, 24, 40), (2, 2, 0)),  # O 8, K 4
    ("LPPool3d", nn.LPPool3d(2, 2), (1, 4, 4, 4), (128, 56, 72), (2, 2, 0)),  # O 8, K 8
]


@pytest.mark.parametrize("name, module, shape, expected, rf", CASES, ids=[case[0] for case in CASES])
def test_family_counts(name, module, shape, expected, rf):
    report = crawl_module(module, shape)
    assert counts(report) == expected
    assert trio(report) == rf
    assert module_diagnostics(report) == []


def test_activation_zero_batch_gives_zero_everywhere():
    for module in (nn.PReLU(), nn.Mish(), nn.Softmax(-1), nn.GELU(), nn.Hardswish()):
        report = crawl_module(module, args=(torch.rand(0, 4),))
        assert counts(report) == (0, 0, 0), type(module).__name__


def test_softmax_legacy_dim_none():
    # Softmax(dim=None) on a 3-D input: torch's legacy dim 0; (2,3,4): R = 12, 5*24 - 24 = 96
    report = crawl_module(nn.Softmax(dim=None), args=(torch.rand(2, 3, 4),))
    assert counts(report)[0] == 96


# ---------------------------------------------------------------------------------------------------------------
# Module FLOPs equal operator FLOPs on pointwise and pooling families (and norms with the same convention)
# ---------------------------------------------------------------------------------------------------------------

PARITY = [
    (nn.ReLU(), X24),
    (nn.ReLU6(), X24),
    (nn.ELU(), X24),
    (nn.LeakyReLU(), X24),
    (nn.Tanh(), X24),
    (nn.Sigmoid(), X24),
    (nn.Hardtanh(), X24),
    (nn.Threshold(0.1, 0.0), X24),
    (nn.Hardshrink(), X24),
    (nn.Softsign(), X24),
    (nn.Hardsigmoid(), X24),
    (nn.PReLU(), X24),
    (nn.RReLU(), X24),
    (nn.Hardswish(), X24),
    (nn.Softshrink(), X24),
    (nn.CELU(), X24),
    (nn.SELU(), X24),
    (nn.LogSigmoid(), X24),
    (nn.Softplus(), X24),
    (nn.Tanhshrink(), X24),
    (nn.Mish(), X24),
    (nn.GELU(), X24),
    (nn.GELU("tanh"), X24),
    (nn.SiLU(), X24),
    (nn.GLU(), X24),
    (nn.Softmax(-1), X24),
    (nn.LogSoftmax(-1), X24),
    (nn.Softmin(-1), X24),
    (nn.Softmax2d(), (4, 2, 2)),
    (nn.MaxPool1d(2), (2, 8)),
    (nn.MaxPool2d(2), (2, 8, 8)),
    (nn.MaxPool3d(2), (2, 8, 8, 8)),
    (nn.AvgPool1d(2), (2, 8)),
    (nn.AvgPool2d(2), (2, 8, 8)),
    (nn.AvgPool3d(2), (2, 8, 8, 8)),
    (nn.MaxPool2d(3, 2, 1, dilation=2), (1, 9, 9)),
    (nn.AdaptiveMaxPool1d(3), (2, 5)),
    (nn.AdaptiveMaxPool2d((3, 2)), (2, 5, 7)),
    (nn.AdaptiveMaxPool3d((3, 2, 3)), (2, 5, 7, 4)),
    (nn.AdaptiveAvgPool1d(3), (2, 5)),
    (nn.AdaptiveAvgPool2d((3, 2)), (2, 5, 7)),
    (nn.AdaptiveAvgPool3d((3, 2, 3)), (2, 5, 7, 4)),
    (nn.GroupNorm(2, 4), (4, 3)),
    (nn.RMSNorm(4), (3, 4)),
    (nn.InstanceNorm1d(4), (4, 5)),
    (nn.LayerNorm(4), (3, 4)),
]


@pytest.mark.parametrize("module, shape", PARITY, ids=[f"{type(m).__name__}-{len(s)}d" for m, s in PARITY])
def test_module_flops_equal_operator_flops(module, shape):
    report = crawl_module(module, shape)
    metrics = report["layers"][0]["metrics"]
    assert metrics["operator_flops"]["status"] == "complete"
    assert metrics["module_flops"]["value"] == metrics["operator_flops"]["value"]


def test_contract_pinned_pooling_and_softmax2d_both_views():
    # Softmax2d on (2,4,2,2): 144 for both FLOP views (contract)
    report = crawl_module(nn.Softmax2d(), args=(torch.rand(2, 4, 2, 2),))
    assert counts(report)[0] == 144 == report["operator_flops"]["total"]["value"]
    # Unbatched MaxPool2d((2,), return_indices=True) on (2,4,4): 24 FLOPs, 24 MACs, 48 DMAs
    report = crawl_module(nn.MaxPool2d((2,), return_indices=True), args=(torch.rand(2, 4, 4),))
    assert counts(report) == (24, 24, 48)


def test_views_that_differ_by_convention():
    # RNNCell(4, 3) on (1,4): the operator view counts addmm at 2*M*N*K without the bias adds
    # (2*1*3*4 + 2*1*3*3 = 42), the combining add (3) and tanh (18): 63. The module view adds both bias
    # vectors: 2*3 = 6 more: 69.
    report = crawl_module(nn.RNNCell(4, 3), (4,))
    metrics = report["layers"][0]["metrics"]
    assert metrics["operator_flops"]["value"] == 63 and metrics["module_flops"]["value"] == 69
    # LocalResponseNorm: same decomposition, but pow(beta) has no operator formula
    report = crawl_module(nn.LocalResponseNorm(2), (4, 3, 3))
    assert report["layers"][0]["metrics"]["module_flops"]["value"] == 252


# ---------------------------------------------------------------------------------------------------------------
# Padding modules (every class): 2O for reflection/replication/circular; kept input + O for constant/zero
# ---------------------------------------------------------------------------------------------------------------

PADS = [
    (cls, rank)
    for rank in (1, 2, 3)
    for cls in (
        getattr(nn, f"ReflectionPad{rank}d"),
        getattr(nn, f"ReplicationPad{rank}d"),
        getattr(nn, f"CircularPad{rank}d"),
        getattr(nn, f"ConstantPad{rank}d"),
        getattr(nn, f"ZeroPad{rank}d"),
    )
]


@pytest.mark.parametrize("cls, rank", PADS, ids=[f"{c.__name__}" for c, _ in PADS])
def test_every_padding_module(cls, rank):
    shape = (2,) + (3,) * rank  # (C, 3, ...) unbatched-free: batch 1 added by crawl_module
    module = cls(1, 0.5) if cls.__name__.startswith("Constant") else cls(1)
    report = crawl_module(module, shape)
    n = 2 * 3**rank
    o = 2 * 5**rank
    constant = cls.__name__.startswith(("Constant", "Zero"))
    assert counts(report) == (0, 0, n + o if constant else 2 * o)
    assert trio(report) == "n/a"


def test_constant_pad_crops():
    # ConstantPad2d((-1, 1, 0, 2)) on (1,2,3,3) -> (1,2,5,3): the last axis keeps 2 columns: 12 reads + O 30
    report = crawl_module(nn.ConstantPad2d((-1, 1, 0, 2), 0.0), (2, 3, 3))
    assert counts(report) == (0, 0, 42)


# ---------------------------------------------------------------------------------------------------------------
# Embeddings, Bilinear, similarity and distance, unpooling
# ---------------------------------------------------------------------------------------------------------------


def test_embedding_and_bag():
    # Embedding(10, 4) on (1,3): N 3, O 12: N + 2O = 27; the trio is not applicable
    report = crawl_module(nn.Embedding(10, 4, padding_idx=0), args=(torch.tensor([[1, 2, 3]]),))
    assert counts(report) == (0, 0, 27) and trio(report) == "n/a"
    # max_norm renormalizes rows: refused (module_metric_error, NotImplementedError)
    report = crawl_module(nn.Embedding(10, 4, max_norm=1.0), args=(torch.tensor([[1, 2, 3]]),))
    diagnostics = module_diagnostics(report)
    assert {d["code"] for d in diagnostics} == {"module_metric_error"}
    assert all(d["message"].startswith("NotImplementedError: Embedding with max_norm") for d in diagnostics)
    # EmbeddingBag(10, 4) mean on (2,3): 24 gathered elements, O 8: (24 - 8) adds + 8 divisions = 24;
    # MACs 24; DMAs 6 + 24 + 8 = 38
    report = crawl_module(nn.EmbeddingBag(10, 4), args=(torch.tensor([[1, 2, 3], [4, 5, 6]]),))
    assert counts(report) == (24, 24, 38)
    # sum with offsets (2,) and per_sample_weights (6,): 16 adds + 24 products = 40; MACs 24;
    # DMAs 6 + 2 + 24 + 6 + 8 = 46
    bag = nn.EmbeddingBag(10, 4, mode="sum")
    args = (torch.tensor([1, 2, 3, 4, 5, 6]), torch.tensor([0, 3]), torch.rand(6))
    assert counts(crawl_module(bag, args=args)) == (40, 24, 46)
    # max with offsets: 16 comparisons (MACs too); 6 + 2 + 24 + 8 = 40
    bag = nn.EmbeddingBag(10, 4, mode="max")
    assert counts(crawl_module(bag, args=args[:2])) == (16, 16, 40)


def test_bilinear_cosine_pairwise():
    # Bilinear(3, 4, 5) on (2,3), (2,4): O 10, per output 2*3*4 + 3 - 1 + 1 = 27: 270; MACs 10*15 = 150;
    # P = 60 + 5: DMAs 6 + 8 + 65 + 10 = 89
    report = crawl_module(nn.Bilinear(3, 4, 5), args=(torch.rand(2, 3), torch.rand(2, 4)))
    assert counts(report) == (270, 150, 89) and trio(report) == (1, 1, 0)
    # by keyword too
    report = crawl_module(nn.Bilinear(3, 4, 5), args=(torch.rand(2, 3),), kwargs={"input2": torch.rand(2, 4)})
    assert counts(report) == (270, 150, 89)
    # CosineSimilarity(dim=1) on (2,4), (2,4): 8N + O = 66 (= the operator view); MACs 24; DMAs 18
    report = crawl_module(nn.CosineSimilarity(), args=(torch.rand(2, 4), torch.rand(2, 4)))
    assert counts(report) == (66, 24, 18)
    assert report["operator_flops"]["total"]["value"] == 66
    # broadcast (2,4) with (1,4): PyTorch expands to Nb = 8 first: 8Nb + O = 66 in both views; 3Nb = 24 MACs;
    # DMAs read the inputs' own elements: 8 + 4 + 2 = 14
    report = crawl_module(nn.CosineSimilarity(), args=(torch.rand(2, 4), torch.rand(1, 4)))
    assert counts(report) == (66, 24, 14)
    assert report["operator_flops"]["total"]["value"] == 66
    # PairwiseDistance() on (2,4), (2,4): sub + eps 2N, p = 2 norm 2N: 32 (= operator view); p = 1: 30
    report = crawl_module(nn.PairwiseDistance(), args=(torch.rand(2, 4), torch.rand(2, 4)))
    assert counts(report) == (32, 8, 18)
    assert report["operator_flops"]["total"]["value"] == 32
    report = crawl_module(nn.PairwiseDistance(p=1.0), args=(torch.rand(2, 4), torch.rand(2, 4)))
    assert counts(report)[0] == 30 == report["operator_flops"]["total"]["value"]


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_maxunpool(rank):
    pool = getattr(nn, f"MaxPool{rank}d")(2, return_indices=True)
    values, indices = pool(torch.rand((1, 2) + (4,) * rank))
    report = crawl_module(getattr(nn, f"MaxUnpool{rank}d")(2), args=(values, indices))
    # N = 2*2^rank values, O = 2*4^rank: no arithmetic; values and indices read, output written: 2N + O
    n, o = 2 * 2**rank, 2 * 4**rank
    assert counts(report) == (0, 0, 2 * n + o)
    assert trio(report) == (-2, 0.5, 0)


# ---------------------------------------------------------------------------------------------------------------
# Recurrent modules
# ---------------------------------------------------------------------------------------------------------------


def test_rnn_family():
    # RNN(4, 3) on (5,2,4): rows 10; per row 2*3*4 + 2*3*3 + 2*3 (biases) + 3 (ih + hh) + 18 (tanh) = 69:
    # 690; MACs 3*(4 + 3)*10 = 210; P 27, h_n (1,2,3): DMAs 27 + 10*7 + 2*6 = 109
    rnn = nn.RNN(4, 3)
    assert sum(p.numel() for p in rnn.parameters()) == 27
    report = crawl_module(rnn, args=(rand(5, 2, 4),))
    assert counts(report) == (690, 210, 109) and trio(report) == "n/a"
    # nonlinearity relu: 1 instead of 6 per hidden unit: 54 per row
    assert counts(crawl_module(nn.RNN(4, 3, nonlinearity="relu"), args=(rand(5, 2, 4),)))[0] == 540
    # LSTM(4, 3, 2 layers, bidirectional, batch_first) on (2,5,4): rows 10, 2 directions; layer 0 288 and
    # layer 1 (input 6) 336 per row: 20*624 = 12480; MACs 20*(84 + 108) = 3840; P 480; DMAs 480 + 20*16 + 48
    # + 48 = 896
    lstm = nn.LSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True)
    assert sum(p.numel() for p in lstm.parameters()) == 480
    assert counts(crawl_module(lstm, args=(rand(2, 5, 4),))) == (12480, 3840, 896)
    # LSTM(4, 3, proj_size=2) on (5,1,4): per row 96 + 48 + 24 + 96 + 12 = 276: 1380; MACs 78*5 = 390;
    # P 102; DMAs 102 + 5*6 + 2*2 + 2*3 = 142
    lstm = nn.LSTM(4, 3, proj_size=2)
    assert sum(p.numel() for p in lstm.parameters()) == 102
    assert counts(crawl_module(lstm, args=(rand(5, 1, 4),))) == (1380, 390, 142)
    # GRU(4, 3, bias=False) on (1,2,4): per row 72 + 54 + 63 = 189: 378; MACs 126; P 63;
    # DMAs 63 + 2*7 + 2*6 = 89
    assert counts(crawl_module(nn.GRU(4, 3, bias=False), args=(rand(1, 2, 4),))) == (378, 126, 89)
    # unbatched RNN(4, 3) on (5,4): rows 5: 345; h_n (1,3): DMAs 27 + 35 + 6 = 68
    assert counts(crawl_module(nn.RNN(4, 3), args=(rand(5, 4),))) == (345, 105, 68)


def test_packed_sequence_counts_the_real_tokens():
    # LSTM(4, 3) on a packed batch of lengths 3 and 2: data (5,4), rows 5: 5*288 = 1440; MACs 5*84 = 420;
    # P 108; h_n = c_n = (1,2,3): DMAs 108 + 5*7 + 12 + 12 = 167
    packed = pack_padded_sequence(rand(3, 2, 4), torch.tensor([3, 2]))
    report = crawl_module(nn.LSTM(4, 3), args=(packed,))
    assert counts(report) == (1440, 420, 167)


def test_rnn_cells():
    # LSTMCell(4, 3) on (2,4): 2*288 = 576; MACs 168; P 108; DMAs 8 + 108 + 6 + 3*6 = 140
    assert counts(crawl_module(nn.LSTMCell(4, 3), args=(rand(2, 4),))) == (576, 168, 140)
    # GRUCell(4, 3) on (1,4): 2*9*7 + 18 + 3*21 = 207; MACs 63; P 36 + 27 + 18 = 81; DMAs 4 + 81 + 3 + 3 = 91
    assert counts(crawl_module(nn.GRUCell(4, 3), args=(rand(1, 4),))) == (207, 63, 91)
    # RNNCell(4, 3) unbatched (4,): 69; MACs 21; DMAs 4 + 27 + 3 + 3 = 37
    assert counts(crawl_module(nn.RNNCell(4, 3), args=(rand(4),))) == (69, 21, 37)


# ---------------------------------------------------------------------------------------------------------------
# Native Transformer family
# ---------------------------------------------------------------------------------------------------------------


def attention_oracle(b, t, s, e, h, masks=(), bias=True):
    """MultiheadAttention FLOPs/MACs/DMAs (contract 2.1), kdim = vdim = E, written from the docs."""
    d, rows = e // h, b * h * t
    scores = rows * s
    proj = (b * t + 2 * b * s) * e * (2 * e - 1 + bias)
    flops = proj + rows * d + scores * (2 * d - 1) + len(masks) * scores + rows * (5 * s - 2)
    flops += rows * d * (2 * s - 1) + b * t * e * (2 * e - 1 + bias)
    macs = 2 * b * t * e * e + 2 * b * s * e * e + 2 * b * t * s * e
    params = 4 * e * e + 4 * e * bias
    dmas = b * t * e + 2 * b * s * e + params + 7 * b * t * e + 4 * b * s * e + 10 * scores + 4 * rows
    dmas += sum(numel + 2 * scores for numel in masks)
    return flops, macs, dmas


def layernorm_oracle(n, rows, e, bias=True):
    return 6 * n + 2 * rows + (1 + bias) * n, 2 * n, 4 * n + 5 * rows + 1 + (e + e * bias) + 2 * n


def layer_oracle(b, t, s, e, h, f, decoder=False, gelu=False, bias=True, self_masks=(), cross_masks=()):
    """One encoder (decoder) layer: attention(s), linear1, activation, linear2, residual adds, LayerNorms."""
    n, rows, hidden = b * t * e, b * t, b * t * f
    parts = [attention_oracle(b, t, t, e, h, self_masks, bias)]
    if decoder:
        parts.append(attention_oracle(b, t, s, e, h, cross_masks, bias))
    parts.append((hidden * (2 * e - 1 + bias), e * hidden, n + e * f + f * bias + hidden))  # linear1
    parts.append(((5 if gelu else 1) * hidden, 0, 2 * hidden))  # activation
    parts.append((n * (2 * f - 1 + bias), f * n, hidden + f * e + e * bias + n))  # linear2
    blocks = 3 if decoder else 2
    parts.append((blocks * n, 0, 3 * blocks * n))  # residual adds
    parts += [layernorm_oracle(n, rows, e, bias)] * blocks
    return tuple(sum(p[i] for p in parts) for i in range(3))


def add(*triples):
    return tuple(sum(t[i] for t in triples) for i in range(3))


def test_tiny_transformer_pinned():
    # contract: full one-layer nn.Transformer (B=1, E=4, H=2, F=8), src (3,1,4), tgt (2,1,4), final norms:
    # 2694 FLOPs, 1088 MACs, 2144 DMAs; encoder layer 504/912 and decoder layer 544/1069 inside it
    torch.manual_seed(0)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
    report = crawl_module(model, args=(rand(3, 1, 4), rand(2, 1, 4)), strict=False)
    assert [layer["path"] for layer in report["layers"]] == [""]  # an atomic root
    assert counts(report) == (2694, 1088, 2144)
    assert trio(report) == "n/a"
    assert module_diagnostics(report) == []
    for name in ("module_flops", "macs", "dmas"):
        assert report["totals"][name]["status"] == "complete"
    assert layer_oracle(1, 3, 3, 4, 2, 8)[1:] == (504, 912)
    assert layer_oracle(1, 2, 3, 4, 2, 8, decoder=True)[1:] == (544, 1069)
    assert attention_oracle(1, 3, 3, 4, 2)[1:] == (264, 452)
    assert attention_oracle(1, 2, 3, 4, 2)[1:] == (208, 352)
    # batch_first gives the same numbers
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
    assert counts(crawl_module(model, args=(rand(1, 3, 4), rand(1, 2, 4)))) == (2694, 1088, 2144)


@pytest.mark.parametrize("gelu, norm_first, bias", [(False, False, True), (True, True, True), (False, True, False)])
def test_transformer_root_matches_the_documented_formula(gelu, norm_first, bias):
    # 2 encoder and 2 decoder layers, B 2, E 8, H 2, F 16, src length 5, tgt length 3, masks on every block
    model = nn.Transformer(
        8, 2, 2, 2, 16, dropout=0.1, activation="gelu" if gelu else "relu", norm_first=norm_first, bias=bias
    )
    src, tgt = rand(5, 2, 8), rand(3, 2, 8)
    masks = {
        "src_mask": torch.zeros(5, 5),
        "tgt_mask": nn.Transformer.generate_square_subsequent_mask(3),
        "memory_mask": torch.zeros(3, 5),
        "tgt_key_padding_mask": torch.zeros(2, 3),
        "memory_key_padding_mask": torch.zeros(2, 5),
    }
    report = crawl_module(model, args=(src, tgt), kwargs=masks)
    encoder = layer_oracle(2, 5, 5, 8, 2, 16, gelu=gelu, bias=bias, self_masks=(25,))
    decoder = layer_oracle(2, 3, 5, 8, 2, 16, True, gelu, bias, self_masks=(9, 6), cross_masks=(15, 10))
    expected = add(encoder, encoder, layernorm_oracle(80, 10, 8, bias), decoder, decoder,
                   layernorm_oracle(48, 6, 8, bias))
    assert counts(report) == expected


def _mc_dropout(module, args):
    """A forward pre-hook that switches every Dropout and attention block below `module` to training."""
    for sub in module.modules():
        if isinstance(sub, (nn.Dropout, nn.MultiheadAttention)):
            sub.train()


def test_transformer_counts_the_dropouts_a_pre_hook_switches_to_training():
    # MC dropout: the model stays in eval, its dropouts run. The pinned 2694 plus 2 FLOPs per element of each
    # dropout that runs: encoder F-dropout on 24 hidden elements and dropout1/2 on 12, decoder F-dropout on 16
    # and dropout1/2/3 on 8, attention dropout on the scores B*H*T*S: 18 (encoder), 8 (self), 12 (cross).
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.5)
    model.register_forward_pre_hook(_mc_dropout)
    dropouts = 2 * (24 + 2 * 12) + 2 * (16 + 3 * 8) + 2 * (18 + 8 + 12)
    assert dropouts == 252
    report = crawl_module(model, args=(rand(3, 1, 4), rand(2, 1, 4)))
    metrics = report["layers"][0]["metrics"]
    assert metrics["module_flops"] == metric_result(
        status="complete", value=2694 + 252, unit="FLOPs", scope="subtree", method="torchscan_module_formula"
    )
    # MACs and DMAs are defined in eval mode: refused, not silently the eval numbers
    assert metrics["macs"]["status"] == metrics["dmas"]["status"] == "unavailable"
    assert {(d["metric"], d["code"]) for d in module_diagnostics(report)} == {
        ("macs", "module_metric_error"),
        ("dmas", "module_metric_error"),
    }
    # without the hook the same model counts no dropout
    plain = nn.Transformer(4, 2, 1, 1, 8, dropout=0.5)
    assert counts(crawl_module(plain, args=(rand(3, 1, 4), rand(2, 1, 4)))) == (2694, 1088, 2144)


def test_dropouts_switched_on_by_a_pre_hook_and_off_by_a_post_hook_are_counted():
    # the usual MC-dropout pair: the dropouts run in training during the forward and are back in eval when the
    # forward returns; the layer row counts what ran: 1224 eval FLOPs + 132 (attention 2*18, F-dropout 2*24,
    # dropout1/2 2*12 each), as the C tests pin it
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    layer.register_forward_pre_hook(_mc_dropout)

    def back_to_eval(module, args, output):
        for sub in module.modules():
            if isinstance(sub, (nn.Dropout, nn.MultiheadAttention)):
                sub.eval()

    layer.register_forward_hook(back_to_eval)
    report = crawl_module(layer, args=(rand(3, 1, 4),))
    assert report["layers"][0]["metrics"]["module_flops"]["value"] == 1224 + 132
    # a lone Dropout switched on by its own pre-hook and off by its post-hook: 2 FLOPs per element (2*3*4)
    drop = nn.Dropout(0.5)

    def switch_on(module, args):
        module.train()

    def switch_off(module, args, output):
        module.eval()

    drop.register_forward_pre_hook(switch_on)
    drop.register_forward_hook(switch_off)
    report = crawl_module(drop, args=(rand(2, 3, 4),))
    assert report["layers"][0]["metrics"]["module_flops"]["value"] == 2 * 24


def test_a_stack_whose_layers_run_in_different_modes_is_refused_for_that_call():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2, enable_nested_tensor=False)

    def first_layer_only(module, args):
        module.layers[0].dropout1.train()

    hook = encoder.register_forward_pre_hook(first_layer_only)
    report = crawl_module(encoder, args=(rand(3, 1, 4),))
    diagnostics = module_diagnostics(report)
    assert {d["code"] for d in diagnostics} == {"module_metric_error"}
    assert all("same modes" in d["message"] for d in diagnostics)
    hook.remove()
    # 2 * 1224, as test_stacks_count_their_subtree pins it without the final norm
    assert counts(crawl_module(encoder, args=(rand(3, 1, 4),)), 0) == (2448, 1008, 1824)


def test_transformer_refusals():
    src, tgt = rand(3, 1, 4), rand(2, 1, 4)
    # a custom activation is outside the family's formulas: every metric is a module_metric_error
    model = nn.Transformer(4, 2, 1, 1, 8, activation=torch.tanh)
    report = crawl_module(model, args=(src, tgt))
    assert {d["code"] for d in module_diagnostics(report)} == {"module_metric_error"}
    assert "ReLU or exact GELU" in module_diagnostics(report)[0]["message"]
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(model, args=(src, tgt), strict=True)
    # an encoder padding mask with the default enable_nested_tensor: MACs and DMAs refuse, FLOPs count it
    model = nn.Transformer(4, 2, 1, 1, 8)
    kpm = torch.zeros(1, 3, dtype=torch.bool)
    report = crawl_module(model, args=(src, tgt), kwargs={"src_key_padding_mask": kpm})
    metrics = report["layers"][0]["metrics"]
    assert metrics["module_flops"]["status"] == "complete"
    assert metrics["macs"]["status"] == metrics["dmas"]["status"] == "unavailable"


def test_transformer_stack_variants():
    src, tgt = rand(3, 1, 4), rand(2, 1, 4)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    # an Identity final norm counts nothing: encoder layer + decoder layer + the decoder's final LayerNorm
    encoder = nn.TransformerEncoder(layer, 1, nn.Identity(), enable_nested_tensor=False)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, custom_encoder=encoder)
    expected = add(layer_oracle(1, 3, 3, 4, 2, 8), layer_oracle(1, 2, 3, 4, 2, 8, True), layernorm_oracle(8, 2, 4))
    assert counts(crawl_module(model, args=(src, tgt))) == expected == (2592, 1064, 2048)
    # an nn.GELU() module is the exact GELU: 4 more FLOPs per hidden element of the encoder (24): 2694 + 96.
    # torch's decoder clones lose a module activation (TransformerDecoderLayer.__setstate__ puts F.relu in the
    # instance dict), so the decoder really runs ReLU, and the formula reads what runs.
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, activation=nn.GELU())
    assert model.decoder.layers[0].activation is nn.functional.relu
    assert counts(crawl_module(model, args=(src, tgt))) == (2790, 1088, 2144)
    # GELU(approximate='tanh') and stacks whose layers differ are outside the family's formulas
    refused = [nn.Transformer(4, 2, 1, 1, 8, activation=nn.GELU("tanh"))]
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    encoder.layers[1] = nn.TransformerEncoderLayer(4, 2, 16)
    refused.append(nn.Transformer(4, 2, 1, 1, 8, custom_encoder=encoder))
    for model, reason in zip(refused, ("ReLU or exact GELU", "identical stacked layers")):
        diagnostics = module_diagnostics(crawl_module(model, args=(src, tgt)))
        assert {d["code"] for d in diagnostics} == {"module_metric_error"}
        assert all(reason in d["message"] for d in diagnostics)


def test_transformer_layer_owns_its_subtree():
    # A layer called as a module keeps its children's rows (they are hooked), but its built-in estimate is
    # inclusive: the children are covered (metric_owners) and carry no estimate of their own.
    report = crawl_module(nn.TransformerEncoderLayer(4, 2, 8), args=(rand(3, 1, 4),))
    paths = [layer["path"] for layer in report["layers"]]
    assert "" in paths and "self_attn" in paths
    root = _row(report, "")
    assert root["metric_ownership"]["module_flops"] == "subtree"
    assert root["metrics"]["module_flops"]["scope"] == "subtree"
    child = _row(report, "self_attn")
    assert "module_flops" not in child["metrics"]
    assert child["metric_owners"]["module_flops"] == {"path": "", "call_index": 0}


def _row(report, path):
    return next(layer for layer in report["layers"] if layer["path"] == path)


def test_encoder_layer_root_counts_its_subtree():
    report = crawl_module(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), args=(rand(3, 1, 4),))
    assert counts(report, 0) == layer_oracle(1, 3, 3, 4, 2, 8) == (1224, 504, 912)
    assert report["totals"]["module_flops"]["value"] == 1224


def test_decoder_layer_root_counts_its_subtree():
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0)
    report = crawl_module(layer, args=(rand(2, 1, 4), rand(3, 1, 4)))
    assert counts(report, 0) == (1300, 544, 1069)
    assert report["totals"]["dmas"]["value"] == 1069


def test_stacks_count_their_subtree():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2, nn.LayerNorm(4), enable_nested_tensor=False)
    report = crawl_module(encoder, args=(rand(3, 1, 4),))
    # 2 layers and the final norm: 2*1224 + 102, 2*504 + 24, 2*912 + 96
    assert counts(report, 0) == (2550, 1032, 1920)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8), 1)
    report = crawl_module(decoder, args=(rand(2, 1, 4), rand(3, 1, 4)))
    assert counts(report, 0) == (1300, 544, 1069)


# ---------------------------------------------------------------------------------------------------------------
# The zoo: models built only from torch.nn modules have complete module totals
# ---------------------------------------------------------------------------------------------------------------


def _transformer_case():
    torch.manual_seed(0)
    model = nn.Transformer(16, 2, 2, 2, 32, batch_first=True)
    return zoo.Case(model, (rand(2, 6, 16), rand(2, 5, 16)))


ZOO = {
    "cnn": zoo.resnet,
    "mobilenet_v2": zoo.mobilenet_v2,
    "mobilenet_v3": zoo.mobilenet_v3,
    "efficientnet": zoo.efficientnet,
    "vit": zoo.vit,
    "unet": zoo.unet,
    "lstm": zoo.lstm,
    "gru": zoo.gru,
    "transformer": _transformer_case,
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_module_totals_are_complete(name):
    case = ZOO[name]()
    report = crawl_module(case.model, args=case.args, kwargs=case.kwargs)
    assert module_diagnostics(report) == []
    for metric in ("module_flops", "macs", "dmas"):
        total = report["totals"][metric]
        assert total["status"] == "complete" and total["value"] > 0, (metric, total)
    # every metric leaf row has its three counts
    for layer in report["layers"]:
        if "module_flops" in layer["metrics"]:
            counts(report, report["layers"].index(layer))


# Zoo models whose strict crawl is refused today, with the operators its diagnostics name as uncounted. None:
# every zoo model's operator coverage is complete. Pinned both ways: a model that gains an uncounted operator
# fails, and so does an entry here whose model became complete (remove the entry then).
STRICT_INCOMPLETE: dict[str, set[str]] = {}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_strict(name):
    case = ZOO[name]()

    def crawl():
        return crawl_module(case.model, args=case.args, kwargs=case.kwargs, strict=True)

    if name in STRICT_INCOMPLETE:
        with pytest.raises(IncompleteAnalysisError) as info:
            crawl()
        report = info.value.report
        assert module_diagnostics(report) == []
        assert {d["code"] for d in report["diagnostics"]} == {"uncounted_operator"}
        assert {d["operator"] for d in report["diagnostics"]} == STRICT_INCOMPLETE[name]
        return
    report = crawl()
    assert report["diagnostics"] == [] and report["operator_flops"]["diagnostics"] == []
    for metric in ("module_flops", "macs", "dmas", "operator_flops"):
        assert report["totals"][metric]["status"] == "complete", (metric, report["totals"][metric])
    by_operator = report["operator_flops"]["by_operator"]
    assert report["totals"]["operator_flops"]["value"] == sum(by_operator.values()) > 0
    # the same forward under FlopCounterMode: equal counts on every operator it covers
    assert_flopcounter_parity(report["operator_flops"], _flopcounter_of_observed_forward(case, report))


def _flopcounter_of_observed_forward(case, report):
    """FlopCounterMode's counts of the forward the crawl ran: eval, no_grad, with a forward hook on each module
    the report has a row for. The hooks matter: an nn.TransformerEncoderLayer with a hook in its subtree leaves
    its fused fast path (one operator, which FlopCounterMode does not count) and runs its sub-layers. The crawl
    observes the ViT's encoder layers and their sub-layers (rows), while a root nn.Transformer owns its subtree
    (one row) and its encoder layers keep the fast path."""
    case.model.eval()
    modules = dict(case.model.named_modules())
    paths = {row["path"] for row in report["layers"]}
    handles = [modules[path].register_forward_hook(lambda *_: None) for path in paths]
    try:
        with torch.no_grad():
            return flopcounter_counts(lambda: case.model(*case.args, **case.kwargs))
    finally:
        for handle in handles:
            handle.remove()


def test_zoo_vit_encoder_owns_its_subtree():
    # ViT (zoo): batch 2, 17 tokens, E 16, H 2, F 32, exact GELU, norm_first, 2 layers, no final norm. The
    # TransformerEncoder is the outermost native owner: its row carries 2 layer formulas, and everything under
    # it (layers, attention, linears, norms) is covered. The total is the encoder plus the other leaves.
    case = zoo.vit()
    report = crawl_module(case.model, args=case.args)
    layer = layer_oracle(2, 17, 17, 16, 2, 32, gelu=True)
    encoder = report["layers"].index(_row(report, "encoder"))
    assert counts(report, encoder) == tuple(2 * v for v in layer)
    others = [
        counts(report, i)
        for i, row in enumerate(report["layers"])
        if row["path"] in ("patch", "drop", "norm", "head")
    ]
    assert report["totals"]["module_flops"]["value"] == 2 * layer[0] + sum(c[0] for c in others)


# ---------------------------------------------------------------------------------------------------------------
# docs/module-formulas.md against the C tables
# ---------------------------------------------------------------------------------------------------------------


def _native_classes():
    text = (ROOT / "src/ext/module_family.c").read_text()
    table = text[text.index("native_classes[] = {") : text.index("};", text.index("native_classes[] = {"))]
    return dict(re.findall(r'\{"(\w+)", (TS_MOD_\w+), \d\}', table))


def _kind_names():
    text = (ROOT / "src/core/module_formulas.c").read_text()
    return dict(re.findall(r'\[(TS_MOD_\w+)\] = \{\s*"(\w+)"', text))


def _documented_classes():
    text = (ROOT / "docs/module-formulas.md").read_text()
    section = text[text.index("## Class index") :]
    return dict(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", section, flags=re.M))


def test_docs_class_index_matches_the_c_tables():
    classes, kinds, documented = _native_classes(), _kind_names(), _documented_classes()
    assert len(classes) > 100 and len(kinds) == len(set(kinds.values()))
    assert documented == {name: kinds[kind] for name, kind in classes.items()}
    # every family kind but "unknown" serves at least one class, and every kind has a formula row
    assert set(documented.values()) == set(kinds.values()) - {"unknown"}
    formulas = (ROOT / "docs/module-formulas.md").read_text().split("## Class index")[0]
    for kind in set(kinds.values()) - {"unknown"}:
        assert f"`{kind}`" in formulas, kind


def test_native_classes_table_is_sorted_and_resolves():
    names = list(_native_classes())
    assert names == sorted(names)
    for name in names:
        if name.startswith("_") or name in ("SyncBatchNorm",):
            continue
        assert hasattr(nn, name), name


def test_an_empty_sequential_is_identitys_complete_zero():
    # nn.Sequential() returns its input unchanged (it is used as an identity shortcut): Identity's formulas,
    # 0 FLOPs, 0 MACs, N DMAs (the input is read), receptive field (1, 1, 0). It was an unsupported module.
    from torchscan import modules

    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(), nn.ReLU())
    report = crawl_module(model, (4,), strict=True)
    shortcut = report["layers"][2]
    assert (shortcut["path"], shortcut["type"]) == ("1", "Sequential")
    values = {name: metric["value"] for name, metric in shortcut["metrics"].items()}
    assert values == {"calls": 1, "module_flops": 0, "macs": 0, "dmas": 4, "receptive_field": 1,
                      "effective_stride": 1, "effective_padding": 0, "operator_flops": 0}
    identity = crawl_module(nn.Sequential(nn.Linear(4, 4), nn.Identity(), nn.ReLU()), (4,))
    assert report["totals"] == identity["totals"]
    x = torch.rand(1, 4)
    assert (modules.module_flops(nn.Sequential(), (x,), x), modules.module_dmas(nn.Sequential(), x, x)) == (0, 4)

    class Doubling(nn.Sequential):  # a subclass may compute: no formula
        def forward(self, x):
            return 2 * x

    odd = crawl_module(Doubling(), (4,))
    assert odd["totals"]["module_flops"]["status"] == "partial"
    assert [d["code"] for d in odd["diagnostics"]][:1] == ["unsupported_module_metric"]
    with pytest.warns(UserWarning, match="Module type not supported: Sequential"):
        assert modules.module_flops(nn.Sequential(nn.ReLU()), (x,), x) == 0  # a container has no formula
