"""module_call.c: the parts of a call the formulas read beyond the first input and output (extb).

MultiheadAttention's key and value may come by keyword; its returned weights (averaged over heads) and a key
padding mask each add B·H·T·S FLOPs; a call without key and value has no input. A recurrent module's state
is read from its output: LSTM's (h_n, c_n) pair adds 2·numel(c_n) DMAs only when c_n is a tensor
(docs/module-formulas.md: DMAs P + Σ rows·(in + R) + 2·numel(h_n) + [LSTM] 2·numel(c_n)).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module
from torchscan.modules import module_dmas, module_flops


def rand(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


def _flops(report):
    return report["layers"][0]["metrics"]["module_flops"]["value"]


def test_attention_keyword_arguments_masks_and_weights():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).eval()
    q, k = rand(3, 1, 4), rand(5, 1, 4)
    positional = _flops(crawl_module(mha, args=(q, k, k)))
    assert _flops(crawl_module(mha, args=(q,), kwargs={"key": k, "value": k})) == positional
    # B 1, H 2, T 3, S 5: the head-averaged weights cost B*H*T*S = 30 FLOPs
    no_weights = _flops(crawl_module(mha, args=(q, k, k), kwargs={"need_weights": False}))
    assert positional - no_weights == 30
    # a key padding mask: one masked fill per score, B*H*T*S = 30
    kpm = torch.zeros(1, 5, dtype=torch.bool)
    assert _flops(crawl_module(mha, args=(q, k, k), kwargs={"key_padding_mask": kpm})) - positional == 30
    # the module formulas outside a crawl read the same: an output without weights is the need_weights=False call
    with torch.no_grad():
        out = mha(q, k, k)
    assert module_flops(mha, (q, k, k), out) == positional
    assert module_flops(mha, (q, k, k), out[0]) == no_weights
    for call in ((q,), (q, 5, k), (q, k, "v")):  # no key, or a key or value that is not a tensor
        with pytest.raises(ValueError, match="the module call exposes no input tensor"):
            module_flops(mha, call, out)


def test_an_lstm_state_read_from_its_output():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4).eval()
    x = rand(5, 1, 3)
    with torch.no_grad():
        out, (h, c) = lstm(x)
    # P = 4*4*(3+4) + 2*16 = 144; rows 5 * (in 3 + R 4) = 35; 2*numel(h_n) = 8; 2*numel(c_n) = 8
    assert module_dmas(lstm, (x,), (out, (h, c))) == 195
    flops = module_flops(lstm, (x,), (out, (h, c)))
    # a state pair whose cell is not a tensor: the same FLOPs, no c_n traffic
    assert module_flops(lstm, (x,), (out, (h, 7))) == flops
    assert module_dmas(lstm, (x,), (out, (h, 7))) == 195 - 8
    # no state at all (or a one-element tuple): nothing to read the state from
    for bad in (out, (out, (h,))):
        with pytest.raises(ValueError, match="the module call exposes no second tensor"):
            module_flops(lstm, (x,), bad)


def test_attention_called_by_keyword_only():
    # query, key and value all by keyword: the same call as positional (FLOPs and the shared-token relation)
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).eval()
    x = rand(3, 1, 4)
    positional = crawl_module(mha, args=(x, x, x))["layers"][0]
    keywords = crawl_module(mha, kwargs={"query": x, "key": x, "value": x})["layers"][0]
    assert keywords["metrics"]["module_flops"]["value"] == positional["metrics"]["module_flops"]["value"]
    for row in (positional, keywords):
        [source] = row["token_dependencies"]["sources"]
        assert (source["arguments"], source["relation"]) == (["query", "key", "value"], {"kind": "all"})
    # a causal mask given by keyword with is_causal: each position sees a prefix; the mask adds one fill per
    # score (B*H*T*S = 1*2*3*3 = 18)
    causal = torch.full((3, 3), float("-inf")).triu(1)
    masked = crawl_module(mha, args=(x,), kwargs={"key": x, "value": x, "is_causal": True, "attn_mask": causal})
    row = masked["layers"][0]
    assert row["token_dependencies"]["sources"][0]["relation"] == {"kind": "prefix"}
    assert row["metrics"]["module_flops"]["value"] - positional["metrics"]["module_flops"]["value"] == 18


def test_embedding_bag_offsets_and_weights_by_position_or_keyword():
    # EmbeddingBag(10, 3, sum) on N = 5 indices in 2 bags: D 3, O 6.
    # FLOPs N*D - O = 9, MACs 9, DMAs N + offsets 2 + N*D + O = 28; per_sample_weights add N*D = 15 FLOPs,
    # make the MACs the weighted sums N*D = 15, and add N = 5 DMAs
    bag = nn.EmbeddingBag(10, 3, mode="sum")
    idx, offsets, weights = torch.tensor([1, 2, 3, 4, 5]), torch.tensor([0, 2]), rand(5)

    def counts(args, kwargs):
        metrics = crawl_module(bag, args=args, kwargs=kwargs)["layers"][0]["metrics"]
        return tuple(metrics[k]["value"] for k in ("module_flops", "macs", "dmas"))

    assert counts((idx, offsets), {}) == counts((idx,), {"offsets": offsets}) == (9, 9, 28)
    assert counts((idx, offsets, weights), {}) == (24, 15, 33)
    assert counts((idx,), {"offsets": offsets, "per_sample_weights": weights}) == (24, 15, 33)
