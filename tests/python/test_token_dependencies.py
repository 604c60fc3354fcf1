"""LayerReport.token_dependencies on real native attention and Transformer modules (contract 1.1).

Two oracles, neither of them the code under test:

- exact dicts written from the contract's text: self-attention with shared q/k/v gives one source
  ["query", "key", "value"]; no mask gives `all`; a causal mask gives `prefix`, with `first_position` 1 on
  query and key relations; a single key gives query and key relations of `none`; an encoder gives ["src"], a
  decoder ["tgt"] and ["memory"], nn.Transformer ["tgt"] and ["src"]; padding that excludes tokens and
  irregular masks are unavailable with `unsupported_token_dependencies`;
- autograd: on float64 copies with random weights, output position i depends on source position j exactly
  when d output[i] / d source[j] is not zero, which is what each reported relation must describe.
"""

from __future__ import annotations

import copy
import json
import warnings

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, ModuleHandler, compare_reports, crawl_module, summary

METHOD = "torchscan_token_dependency_v1"
UNAVAILABLE = {"status": "unavailable", "scope": "module_call", "method": METHOD, "assumptions": [], "sources": []}


def _causal(n: int, m: int | None = None) -> torch.Tensor:
    """PyTorch's canonical causal mask as a float mask: -inf strictly above the diagonal."""
    m = n if m is None else m
    return torch.full((n, m), float("-inf")).triu(1)


def _complete(output: tuple[int, int], *sources: tuple[list[str], int, int, dict]) -> dict:
    """The contract's TokenDependency of a complete call: output (axis, length), then sources
    (arguments, axis, length, relation). The assumption sentences are checked apart."""
    return {
        "status": "complete",
        "scope": "module_call",
        "method": METHOD,
        "output": {"sequence_axis": output[0], "length": output[1]},
        "sources": [
            {"arguments": args, "sequence_axis": axis, "length": length, "relation": relation}
            for args, axis, length, relation in sources
        ],
    }


def _tokens(report: dict, path: str = "") -> dict:
    rows = [layer for layer in report["layers"] if layer["path"] == path]
    assert len(rows) == 1
    tokens = rows[0]["token_dependencies"]
    json.dumps(tokens, allow_nan=False)
    return tokens


def _without_assumptions(tokens: dict) -> dict:
    assert len(tokens["assumptions"]) == 3 and all(isinstance(a, str) and a for a in tokens["assumptions"])
    return {k: v for k, v in tokens.items() if k != "assumptions"}


def _token_diagnostics(report: dict) -> list[dict]:
    return [d for d in report["diagnostics"] if d["code"] == "unsupported_token_dependencies"]


ALL = {"kind": "all"}
PREFIX = {"kind": "prefix"}
SAME = {"kind": "same_position"}
NONE = {"kind": "none"}


# ---------------------------------------------------------------------------------------------------------------
# MultiheadAttention


@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_without_mask_is_all_to_all(batch_first: bool) -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=batch_first)
    x = torch.randn(1, 3, 4) if batch_first else torch.randn(3, 1, 4)
    report = crawl_module(mha, args=(x, x, x), strict=True)
    axis = 1 if batch_first else 0
    tokens = _tokens(report)
    assert _without_assumptions(tokens) == _complete((axis, 3), (["query", "key", "value"], axis, 3, ALL))
    # the row's spatial trio stays not applicable; tokens describe the mixing instead
    assert report["layers"][0]["metrics"]["receptive_field"]["status"] == "unavailable"


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "mask",
    [_causal(4), _causal(4).isinf(), _causal(4).expand(2, 4, 4).clone()],
    ids=["float -inf", "bool", "batch*heads"],
)
def test_causal_attn_mask_gives_prefix(batch_first: bool, mask: torch.Tensor) -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=batch_first)
    x = torch.randn(1, 4, 4) if batch_first else torch.randn(4, 1, 4)
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask}, strict=True)
    axis = 1 if batch_first else 0
    assert _without_assumptions(_tokens(report)) == _complete((axis, 4), (["query", "key", "value"], axis, 4, PREFIX))


def test_is_causal_with_its_mask() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 2, 4)
    for need_weights in (True, False):
        report = crawl_module(
            mha, args=(x, x, x), kwargs={"attn_mask": _causal(3), "is_causal": True, "need_weights": need_weights}
        )
        assert _without_assumptions(_tokens(report)) == _complete((0, 3), (["query", "key", "value"], 0, 3, PREFIX))
    # a hint whose mask is not the causal one
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": torch.zeros(3, 3), "is_causal": True})
    assert _tokens(report) == UNAVAILABLE
    [diagnostic] = _token_diagnostics(report)
    assert "is_causal=True but attn_mask is not the canonical causal mask" in diagnostic["message"]


def test_separate_query_key_and_value() -> None:
    """Causal cross-attention, 2 queries over 5 keys: query i sees keys 0..i; output 0 sees one key, so it
    depends on neither its query nor that key (first_position 1); keys 2..4 are never seen (limit 2)."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    q, k, v = torch.randn(2, 1, 4), torch.randn(5, 1, 4), torch.randn(5, 1, 4)
    report = crawl_module(mha, args=(q, k, v), kwargs={"attn_mask": _causal(2, 5)}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete(
        (0, 2),
        (["query"], 0, 2, {"kind": "same_position", "first_position": 1}),
        (["key"], 0, 5, {"kind": "prefix", "limit": 2, "first_position": 1}),
        (["value"], 0, 5, {"kind": "prefix", "limit": 2}),
    )
    # one memory tensor as key and value: one source
    report = crawl_module(mha, args=(q, k, k))
    assert _without_assumptions(_tokens(report)) == _complete((0, 2), (["query"], 0, 2, SAME), (["key", "value"], 0, 5, ALL))


def test_a_single_key() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    q, memory = torch.randn(3, 1, 4), torch.randn(1, 1, 4)
    report = crawl_module(mha, args=(q, memory, memory), strict=True)
    # the key relation is none, the value one all: the source that is both depends on all of it
    assert _without_assumptions(_tokens(report)) == _complete((0, 3), (["query"], 0, 3, NONE), (["key", "value"], 0, 1, ALL))


def test_key_padding_masks() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 2, 4)
    # all False, or finite: only reweighting
    for padding in (torch.zeros(2, 3, dtype=torch.bool), torch.tensor([[0.0, -5.0, 0.0], [0.0, 0.0, -1e9]])):
        report = crawl_module(mha, args=(x, x, x), kwargs={"key_padding_mask": padding}, strict=True)
        assert _without_assumptions(_tokens(report)) == _complete((0, 3), (["query", "key", "value"], 0, 3, ALL))
    # padding that excludes a token
    padding = torch.tensor([[False, False, True], [False, False, False]])
    report = crawl_module(mha, args=(x, x, x), kwargs={"key_padding_mask": padding})
    assert _tokens(report) == UNAVAILABLE
    [diagnostic] = report["diagnostics"]
    assert diagnostic["code"] == "unsupported_token_dependencies"
    assert diagnostic["metric"] == "token_dependencies"
    assert diagnostic["path"] == ""
    assert "key_padding_mask excludes positions" in diagnostic["message"]
    with pytest.raises(IncompleteAnalysisError, match="token_dependencies"):
        crawl_module(mha, args=(x, x, x), kwargs={"key_padding_mask": padding}, strict=True)


@pytest.mark.parametrize(
    ("mask", "reason"),
    [
        (torch.tensor([[False, True, False], [False, False, False], [True, False, False]]), "excludes positions other"),
        (_causal(3).T.contiguous(), "excludes positions other"),  # anti-causal
        (torch.tensor([[0.0, float("nan"), 0.0]] * 3), "holds NaN or +inf"),
        (torch.tensor([[0.0, float("inf"), 0.0]] * 3), "holds NaN or +inf"),
    ],
    ids=["irregular", "anti-causal", "nan", "+inf"],
)
def test_other_masks_are_unavailable(mask: torch.Tensor, reason: str) -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask})
    assert _tokens(report) == UNAVAILABLE
    [diagnostic] = _token_diagnostics(report)
    assert reason in diagnostic["message"]


def test_a_finite_additive_mask_only_reweights() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 1, 4)
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": torch.randn(3, 3)}, strict=True)
    assert _tokens(report)["sources"][0]["relation"] == ALL


def test_a_strided_mask_is_read_through_its_strides() -> None:
    """A transposed view and an expanded (stride 0) mask are read as PyTorch reads them."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = torch.randn(3, 2, 4)
    lower = torch.ones(3, 3, dtype=torch.bool).tril(-1)  # True below the diagonal
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": lower.T}, strict=True)
    assert _tokens(report)["sources"][0]["relation"] == PREFIX
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": _causal(3).expand(4, 3, 3)}, strict=True)
    assert _tokens(report)["sources"][0]["relation"] == PREFIX


def test_add_bias_kv_is_unavailable() -> None:
    mha = nn.MultiheadAttention(4, 2, add_bias_kv=True)
    x = torch.randn(3, 1, 4)
    report = crawl_module(mha, args=(x, x, x))
    assert _tokens(report) == UNAVAILABLE
    assert "add_bias_kv" in _token_diagnostics(report)[0]["message"]


# ---------------------------------------------------------------------------------------------------------------
# The Transformer family


def _encoder_layer(batch_first: bool, d_model: int = 4, nhead: int = 2) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(d_model, nhead, 8, dropout=0.0, batch_first=batch_first)


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer(batch_first: bool) -> None:
    torch.manual_seed(0)
    layer = _encoder_layer(batch_first)
    src = torch.randn(1, 3, 4) if batch_first else torch.randn(3, 1, 4)
    axis = 1 if batch_first else 0
    report = crawl_module(layer, args=(src,), strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((axis, 3), (["src"], axis, 3, ALL))
    report = crawl_module(layer, args=(src,), kwargs={"src_mask": _causal(3)}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((axis, 3), (["src"], axis, 3, PREFIX))
    report = crawl_module(layer, args=(src,), kwargs={"src_mask": _causal(3), "is_causal": True}, strict=True)
    assert _tokens(report)["sources"][0]["relation"] == PREFIX
    # the attention inside is covered: the layer's relation includes it
    attn = next(layer for layer in report["layers"] if layer["path"] == "self_attn")
    assert "token_dependencies" not in attn
    assert attn["metric_owners"]["receptive_field"] == {"path": "", "call_index": 0}


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_with_causal_tgt_and_memory(batch_first: bool) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, batch_first=batch_first)
    tgt = torch.randn(1, 2, 4) if batch_first else torch.randn(2, 1, 4)
    memory = torch.randn(1, 5, 4) if batch_first else torch.randn(5, 1, 4)
    axis = 1 if batch_first else 0
    report = crawl_module(layer, args=(tgt, memory), kwargs={"tgt_mask": _causal(2)}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete(
        (axis, 2), (["tgt"], axis, 2, PREFIX), (["memory"], axis, 5, ALL)
    )
    # a causal memory mask: target i sees memory 0..i
    report = crawl_module(
        layer, args=(tgt, memory), kwargs={"tgt_mask": _causal(2), "memory_mask": _causal(2, 5)}, strict=True
    )
    assert _tokens(report)["sources"][1]["relation"] == {"kind": "prefix", "limit": 2}
    # padding of the memory that excludes a position
    padding = torch.tensor([[False, False, False, False, True]])
    report = crawl_module(layer, args=(tgt, memory), kwargs={"memory_key_padding_mask": padding})
    assert _tokens(report) == UNAVAILABLE
    assert "memory_key_padding_mask excludes positions" in _token_diagnostics(report)[0]["message"]


def test_stacks_and_the_transformer() -> None:
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(_encoder_layer(True), 2, enable_nested_tensor=False)
    src = torch.randn(1, 3, 4)
    report = crawl_module(encoder, args=(src,), kwargs={"mask": _causal(3)}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((1, 3), (["src"], 1, 3, PREFIX))
    assert [layer["path"] for layer in report["layers"] if "token_dependencies" in layer] == [""]

    transformer = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
    tgt = torch.randn(1, 2, 4)
    report = crawl_module(transformer, args=(src, tgt), kwargs={"tgt_mask": _causal(2)}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((1, 2), (["tgt"], 1, 2, PREFIX), (["src"], 1, 3, ALL))


def test_width_one_layer_norm_is_unavailable() -> None:
    layer = nn.TransformerEncoderLayer(1, 1, 4, dropout=0.0)
    report = crawl_module(layer, args=(torch.randn(3, 1, 1),))
    assert _tokens(report) == UNAVAILABLE
    assert "LayerNorm of width 1" in _token_diagnostics(report)[0]["message"]


# ---------------------------------------------------------------------------------------------------------------
# The meta device: no values to read


def test_meta_device() -> None:
    mha = nn.MultiheadAttention(4, 2, device="meta")
    x = torch.empty(3, 1, 4, device="meta")
    mask = _causal(3).to("meta")
    report = crawl_module(mha, args=(x, x, x), strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((0, 3), (["query", "key", "value"], 0, 3, ALL))
    # the hint vouches for a mask whose values are unknown
    report = crawl_module(
        mha, args=(x, x, x), kwargs={"attn_mask": mask, "is_causal": True, "need_weights": False}, strict=True
    )
    assert _tokens(report)["sources"][0]["relation"] == PREFIX
    # without it, the relations are unknown
    report = crawl_module(mha, args=(x, x, x), kwargs={"attn_mask": mask})
    assert _tokens(report) == UNAVAILABLE
    assert "the values of attn_mask cannot be read" in _token_diagnostics(report)[0]["message"]
    # a padding mask has no hint to vouch for it
    padding = torch.zeros(1, 3, dtype=torch.bool, device="meta")
    report = crawl_module(mha, args=(x, x, x), kwargs={"key_padding_mask": padding})
    assert _tokens(report) == UNAVAILABLE

    layer = _encoder_layer(False).to("meta")
    report = crawl_module(layer, args=(x,), kwargs={"src_mask": mask, "is_causal": True}, strict=True)
    assert _without_assumptions(_tokens(report)) == _complete((0, 3), (["src"], 0, 3, PREFIX))


# ---------------------------------------------------------------------------------------------------------------
# Rows, ownership, modes


class _Catches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            self.attn(x, x, x[:, :, :3])  # a value of the wrong width: the forward raises
        except (AssertionError, RuntimeError):
            pass
        return self.attn(x, x, x)[0]


def test_a_failed_forward_is_unavailable_without_a_diagnostic_of_its_own() -> None:
    report = crawl_module(_Catches(), args=(torch.randn(3, 1, 4),))
    failed, ok = [layer for layer in report["layers"] if layer["path"] == "attn"]
    assert failed["output"] == {"kind": "failed"}
    assert failed["token_dependencies"] == UNAVAILABLE
    assert ok["token_dependencies"]["status"] == "complete"
    assert [d["code"] for d in report["diagnostics"]] == ["module_forward_error"]


def test_structure_mode_has_no_token_dependencies() -> None:
    x = torch.randn(3, 1, 4)
    report = crawl_module(nn.MultiheadAttention(4, 2), args=(x, x, x), mode="structure")
    assert "token_dependencies" not in report["layers"][0]


def test_handlers_and_ownership() -> None:
    torch.manual_seed(0)
    src = torch.randn(3, 1, 4)
    layer = _encoder_layer(False)
    # a caller's handler that leaves the receptive field to the built-in estimate: the built-in takes it over
    # for the subtree, and the attention inside loses its own relations
    report = crawl_module(
        layer, args=(src,), custom_modules={nn.TransformerEncoderLayer: ModuleHandler(lambda call: {"module_flops": 1})}
    )
    assert _tokens(report)["sources"] == [{"arguments": ["src"], "sequence_axis": 0, "length": 3, "relation": ALL}]
    assert "token_dependencies" not in next(row for row in report["layers"] if row["path"] == "self_attn")
    # a handler that answers the receptive field itself: the row has none, the attention inside keeps its own
    report = crawl_module(
        layer,
        args=(src,),
        custom_modules={nn.TransformerEncoderLayer: ModuleHandler(lambda call: {"receptive_field": 1})},
    )
    assert "token_dependencies" not in report["layers"][0]
    attn = next(row for row in report["layers"] if row["path"] == "self_attn")
    assert attn["token_dependencies"]["sources"][0]["relation"] == ALL


def test_reports_compare_and_print() -> None:
    torch.manual_seed(0)
    layer = _encoder_layer(False)
    src = torch.randn(3, 1, 4)
    before = crawl_module(layer, args=(src,))
    after = crawl_module(layer, args=(src,), kwargs={"src_mask": _causal(3)})
    diff = compare_reports(before, after)
    [changed] = [row for row in diff["layers"]["changed"] if row["path"] == ""]
    assert changed["token_dependencies"] == {
        "before": before["layers"][0]["token_dependencies"],
        "after": after["layers"][0]["token_dependencies"],
    }
    assert changed["token_dependencies"]["after"]["sources"][0]["relation"] == PREFIX
    assert compare_reports(before, copy.deepcopy(before))["layers"]["changed"] == []
    # the summary table reads such reports
    report = summary(layer, args=(src,), kwargs={"src_mask": _causal(3)})
    assert report["layers"][0]["token_dependencies"]["status"] == "complete"


# ---------------------------------------------------------------------------------------------------------------
# Autograd as the oracle


def _positions(relation: dict, out_len: int, src_len: int) -> list[set[int]]:
    """The source positions each output position depends on, from the contract's meaning of a relation."""
    kind, limit, first = relation["kind"], relation.get("limit", src_len), relation.get("first_position", 0)
    sets = []
    for i in range(out_len):
        if kind == "none" or i < first:
            sets.append(set())
        elif kind == "same_position":
            sets.append({i})
        elif kind == "prefix":
            sets.append(set(range(min(i + 1, limit))))
        else:
            sets.append(set(range(limit)))
    return sets


def _gradient_positions(fn, inputs: list[torch.Tensor], which: int, axis: int, out_axis: int) -> list[set[int]]:
    """{j : d out[i] / d inputs[which][j] != 0} for every output position i (sequence axes given)."""
    def wrapped(x: torch.Tensor) -> torch.Tensor:
        args = list(inputs)
        for k, arg in enumerate(inputs):
            if arg is inputs[which]:
                args[k] = x
        return fn(*args)

    jac = torch.autograd.functional.jacobian(wrapped, inputs[which])
    out_nd = inputs[0].dim()
    out_dims = [d for d in range(out_nd) if d != out_axis]
    in_dims = [out_nd + d for d in range(inputs[which].dim()) if d != axis]
    reduced = jac.abs().sum(dim=out_dims + in_dims)  # (out positions, source positions)
    return [set(torch.nonzero(row > 1e-12).flatten().tolist()) for row in reduced]


def _check_against_gradients(module: nn.Module, fn, inputs: list[torch.Tensor], tokens: dict, names) -> None:
    assert tokens["status"] == "complete"
    out_len = tokens["output"]["length"]
    for source in tokens["sources"]:
        which = names.index(source["arguments"][0])
        expected = _positions(source["relation"], out_len, source["length"])
        found = _gradient_positions(fn, inputs, which, source["sequence_axis"], tokens["output"]["sequence_axis"])
        assert found == expected, (source, found)


@pytest.mark.parametrize(
    ("t", "s", "mask", "shared"),
    [
        (4, 4, None, "qkv"),
        (4, 4, "causal", "qkv"),
        (4, 4, "causal", "qk"),
        (2, 5, "causal", "kv"),
        (2, 5, "causal", ""),
        (5, 2, "causal", ""),
        (3, 1, None, "kv"),
    ],
)
def test_attention_relations_match_gradients(t: int, s: int, mask: str | None, shared: str) -> None:
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(4, 2).double().eval()
    q = torch.randn(t, 2, 4, dtype=torch.float64)
    k = q if "qk" in shared else torch.randn(s, 2, 4, dtype=torch.float64)
    v = q if shared == "qkv" else k if "kv" in shared else torch.randn(s, 2, 4, dtype=torch.float64)
    attn_mask = _causal(t, s).double() if mask else None
    report = crawl_module(mha, args=(q, k, v), kwargs={"attn_mask": attn_mask}, strict=True)

    def fn(q, k, v):
        return mha(q, k, v, attn_mask=attn_mask, need_weights=False)[0]

    _check_against_gradients(mha, fn, [q, k, v], _tokens(report), ["query", "key", "value"])


@pytest.mark.parametrize("memory_mask", [False, True])
@pytest.mark.parametrize("tgt_mask", [False, True])
def test_decoder_stack_relations_match_gradients(tgt_mask: bool, memory_mask: bool) -> None:
    """Two decoder layers, 2 targets over 5 memory positions: with a causal memory mask and no target mask
    the second layer spreads memory 0..1 to every target (all with limit 2)."""
    torch.manual_seed(2)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0), 2).double().eval()
    tgt, memory = torch.randn(2, 1, 4, dtype=torch.float64), torch.randn(5, 1, 4, dtype=torch.float64)
    kwargs = {
        "tgt_mask": _causal(2).double() if tgt_mask else None,
        "memory_mask": _causal(2, 5).double() if memory_mask else None,
    }
    report = crawl_module(decoder, args=(tgt, memory), kwargs=kwargs, strict=True)
    tokens = _tokens(report)
    if memory_mask and not tgt_mask:
        assert tokens["sources"][1]["relation"] == {"kind": "all", "limit": 2}

    def fn(tgt, memory):
        return decoder(tgt, memory, **kwargs)

    _check_against_gradients(decoder, fn, [tgt, memory], tokens, ["tgt", "memory"])


@pytest.mark.parametrize("masks", [(), ("src",), ("src", "memory"), ("tgt", "memory")])
def test_transformer_relations_match_gradients(masks: tuple[str, ...]) -> None:
    torch.manual_seed(3)
    transformer = nn.Transformer(4, 2, 2, 1, 8, dropout=0.0, batch_first=True).double().eval()
    src, tgt = torch.randn(1, 4, 4, dtype=torch.float64), torch.randn(1, 3, 4, dtype=torch.float64)
    kwargs = {
        "src_mask": _causal(4).double() if "src" in masks else None,
        "tgt_mask": _causal(3).double() if "tgt" in masks else None,
        "memory_mask": _causal(3, 4).double() if "memory" in masks else None,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested-tensor note
        report = crawl_module(transformer, args=(src, tgt), kwargs=kwargs, strict=True)
    tokens = _tokens(report)
    assert [s["arguments"] for s in tokens["sources"]] == [["tgt"], ["src"]]

    def fn(src, tgt):
        return transformer(src, tgt, **kwargs)

    _check_against_gradients(transformer, fn, [src, tgt], tokens, ["src", "tgt"])
