"""masks.c: attention masks read in place, in every float width, or left unread (extb).

A causal mask (-inf strictly above the diagonal) makes each query position depend on a prefix of the keys;
its transpose does not. Masks are read in bool, float16, bfloat16, float32 and float64; a view whose values
PyTorch negates on read (the neg bit) or a tensor subclass is not read: the token dependencies are unavailable,
and the diagnostic says the values cannot be read (never relations read with flipped signs).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module


def _causal(n):
    return torch.full((n, n), float("-inf")).triu(1)


def _tokens(report):
    return report["layers"][0]["token_dependencies"]


def _diagnostics(report):
    return [d["message"] for d in report["diagnostics"] if d["code"] == "unsupported_token_dependencies"]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_a_causal_mask_in_each_float_width(dtype):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).to(dtype)
    x = torch.randn(3, 1, 4, dtype=dtype)
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": _causal(3).to(dtype)})
    assert _tokens(report)["status"] == "complete"
    assert _tokens(report)["sources"][0]["relation"] == {"kind": "prefix"}
    # the anti-causal transpose excludes positions a prefix would keep
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": _causal(3).T.contiguous().to(dtype)})
    assert _tokens(report)["status"] == "unavailable"
    assert any("excludes positions other" in m for m in _diagnostics(report))


class _MaskSubclass(torch.Tensor):
    pass


@pytest.mark.parametrize(
    "make",
    [lambda: _causal(3).neg()._neg_view(), lambda: _causal(3).as_subclass(_MaskSubclass)],
    ids=["neg-bit view", "tensor subclass"],
)
def test_masks_whose_values_are_not_read(make):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 1, 4)
    mask = make()
    assert torch.equal(mask.as_subclass(torch.Tensor).resolve_neg(), _causal(3))  # PyTorch sees the causal mask
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask})
    assert _tokens(report)["status"] == "unavailable"
    [message] = _diagnostics(report)
    assert "the values of attn_mask cannot be read" in message
