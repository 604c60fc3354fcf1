"""Module readers on hyperparameters whose value is -1 (an int or real that reads as -1 is not an error) (extb).

Counts from docs/module-formulas.md. Inputs (2, 4): Nb = 8 difference elements, O = 2 rows.
"""

from __future__ import annotations

import torch
from torch import nn

from torchscan import crawl_module


def _counts(module, *inputs):
    metrics = crawl_module(module, args=inputs)["layers"][0]["metrics"]
    assert all(metrics[k]["status"] == "complete" for k in ("module_flops", "macs", "dmas"))
    return tuple(metrics[k]["value"] for k in ("module_flops", "macs", "dmas"))


def test_cosine_similarity_over_dim_minus_one():
    a, b = torch.rand(2, 4), torch.rand(2, 4)
    assert _counts(nn.CosineSimilarity(dim=-1), a, b) == _counts(nn.CosineSimilarity(dim=1), a, b)


def test_pairwise_distance_of_order_minus_one():
    a, b = torch.rand(2, 4), torch.rand(2, 4)
    # p = 1: difference and eps shift 2Nb, norm 2Nb - O: 16 + 14 = 30; MACs Nb = 8; DMAs N1 + N2 + O = 18
    assert _counts(nn.PairwiseDistance(p=1.0), a, b) == (30, 8, 18)
    # other p (-1): 2Nb + |d|^p 2Nb + sum (Nb - O) + root O = 16 + 16 + 6 + 2 = 40
    assert _counts(nn.PairwiseDistance(p=-1.0), a, b) == (40, 8, 18)


def test_negative_constant_padding_crops():
    x = torch.rand(1, 2, 5)
    # ConstantPad1d(-1): (1,2,5) -> (1,2,3): DMAs = input left after the crop (6) + O (6) = 12
    assert _counts(nn.ConstantPad1d(-1, 0.0), x) == (0, 0, 12)
    # (-1, 2): -> (1,2,6): input left 8 + O 12 = 20
    assert _counts(nn.ConstantPad1d((-1, 2), 0.0), x) == (0, 0, 20)
