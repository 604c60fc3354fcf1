"""Built-in estimates of Hugging Face transformers' building blocks, matched by their operators (issue 18, item 2).

Every architecture of the zoo's Hugging Face cases (BERT, GPT-2, Llama, T5, Whisper, Qwen2, Mistral, Mixtral,
Qwen2-MoE, Gemma, Phi, ViT, Swin, wav2vec2; SDPA and eager attention; tiny configs, random weights, nothing
downloaded) is crawled once: module metrics complete, no module diagnostic, and each block's estimate equal to the
operator FLOPs of the same call wherever both count the same work. Where they do not (matrix products: 2K - 1
operations per output against FlopCounterMode's 2K; attention cores: MultiheadAttention's terms against the
fused kernel's), the difference is pinned, and the estimates are pinned by hand arithmetic
(docs/module-formulas.md, "Blocks matched by their operators").
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from functools import cache

import pytest
import torch

import zoo
from torchscan import ModuleHandler, crawl_module

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is missing")

ARCHITECTURES = [
    "bert",
    "gpt2",
    "llama",
    "t5",
    "whisper",
    "qwen2",
    "mistral",
    "mixtral",
    "qwen2_moe",
    "gemma",
    "phi",
    "hf_vit",
    "swin",
    "wav2vec2",
]
CASES = [f"{arch}-{attn}" for arch in ARCHITECTURES for attn in ("sdpa", "eager")]
METHOD = "torchscan_module_formula:signature_"

# Native signatures answer with a torch.nn family's formulas, which equal the operators' counts; so do the
# structures counted operator by operator without a matrix product.
EQUAL_TO_OPERATORS = {
    "activation",
    "embedding",
    "identity",
    "layout",
    "linear",  # addmm with a bias: O(2K - 1) + O = 2KO = FlopCounterMode's 2MKN
    "norm",
    "pointwise",
    "rmsnorm",
    "rmsnorm_offset_weight",
    "rotary_embedding",
    "scaled_embedding",
    "weight_norm",  # 3N + C, as aten._weight_norm_interface counts it
}


@cache
def report(name: str) -> dict:
    case = zoo.fresh(name)
    return crawl_module(case.model, args=case.args, kwargs=case.kwargs)


def rows(name: str) -> list[dict]:
    return report(name)["layers"]


def signature(row: dict) -> str | None:
    method = row["metrics"].get("module_flops", {}).get("method", "")
    return method[len(METHOD) :] if method.startswith(METHOD) else None


def first(name: str, type_name: str) -> dict:
    return next(r for r in rows(name) if r["type"] == type_name)


def value(row: dict, metric: str = "module_flops") -> int:
    result = row["metrics"][metric]
    assert result["status"] == "complete", (row["path"], metric, result)
    return result["value"]


@pytest.mark.parametrize("name", CASES)
def test_module_metrics_complete_without_a_diagnostic(name):
    rep = report(name)
    for metric in ("module_flops", "macs", "dmas"):
        assert rep["totals"][metric]["status"] == "complete", (metric, rep["diagnostics"])
    module_diagnostics = [d for d in rep["diagnostics"] if d.get("metric") != "flops"]
    assert module_diagnostics == []
    # every library class without a torch.nn formula matched a signature; the receptive field of each is a
    # number or not applicable, never an error
    for row in rep["layers"]:
        mf = row["metrics"].get("module_flops")
        if mf is not None and mf["method"].startswith("torchscan_module_formula:signature_"):
            rf = row["metrics"]["receptive_field"]
            assert rf["status"] == "complete" or rf["method"] == "torchscan_module_formula:not_applicable"


@pytest.mark.parametrize("name", CASES)
def test_block_estimates_equal_the_operator_counts_of_the_same_call(name):
    checked = 0
    for row in rows(name):
        sig = signature(row)
        if sig not in EQUAL_TO_OPERATORS:
            continue
        assert value(row) == value(row, "operator_flops"), (row["path"], sig)
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("arch", [a for a in ARCHITECTURES if a != "t5"])
def test_attention_estimates_do_not_depend_on_the_kernel(arch):
    # sdpa runs a fused kernel, eager the decomposed products: the module view counts the same attention
    sdpa = {(r["path"], r["call_index"]): value(r) for r in rows(f"{arch}-sdpa") if "module_flops" in r["metrics"]}
    eager = {(r["path"], r["call_index"]): value(r) for r in rows(f"{arch}-eager") if "module_flops" in r["metrics"]}
    assert sdpa == eager
    assert any(signature(r) == "attention" for r in rows(f"{arch}-sdpa"))


def test_t5_decoder_attention_folds_its_causal_mask_differently_per_kernel():
    # T5's sdpa path masks its position bias once, where(causal, bias, -inf) on (1, H, T, S), and the kernel
    # applies the result; the eager path adds bias and causal mask to the (B, H, T, S) scores: B*H*T*S - H*T*S =
    # (2 - 1) * 2 * 5 * 5 = 50 FLOPs more, per decoder self-attention (the documented remaining difference)
    sdpa = {r["path"]: value(r) for r in rows("t5-sdpa") if signature(r) == "attention"}
    eager = {r["path"]: value(r) for r in rows("t5-eager") if signature(r) == "attention"}
    for path in sdpa:
        expected = 50 if path.startswith("decoder") and "SelfAttention" in path else 0
        assert eager[path] - sdpa[path] == expected, path


# ---------------------------------------------------------------------------------------------------------------
# Hand arithmetic (B = 2 sequences of T = 8 tokens unless said)
# ---------------------------------------------------------------------------------------------------------------


def core(rows_: int, s: int, d: int, dv: int, masks: int, scaled: bool = True) -> int:
    """MultiheadAttention's attention terms (docs/module-formulas.md): query scale R*D, QK^T R*S*(2D - 1), one op per
    score per mask, softmax R*(5S - 2), weights x V R*Dv*(2S - 1)."""
    return (rows_ * d if scaled else 0) + rows_ * s * (2 * d - 1) + masks * rows_ * s + rows_ * (5 * s - 2) + rows_ * dv * (2 * s - 1)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_llama_blocks_by_hand(attn):
    name = f"llama-{attn}"
    n = 2 * 8 * 16
    # RMSNorm: pow, mean, +eps, rsqrt, x * r, w * y = (3 + W)N + 2R
    assert value(first(name, "LlamaRMSNorm")) == 4 * n + 2 * 16
    # rotary tables: 8 positions x 2 frequencies, then cos, sin and two scalings of (1, 8, 4)
    assert value(first(name, "LlamaRotaryEmbedding")) == 16 + 4 * 32
    # attention: 4 query heads, 2 KV heads of width 4, a padding mask; scale 1/2.
    # Rotary application on q (256) and k (128): x*cos, -x2 on half, rotate*sin, sum: 3.5 per element
    rotary = 7 * 256 // 2 + 7 * 128 // 2
    attention = first(name, "LlamaAttention")
    assert value(attention) == core(2 * 4 * 8, 8, 4, 4, masks=1) + rotary == 11968
    assert value(attention, "macs") == 2 * 4 * 8 * 8 * (4 + 4)
    if attn == "sdpa":
        # the CPU kernel counts a scale per score and 2D per QK^T dot product (+R*S), and the module converts the
        # boolean mask with where(mask, 0, -inf) on (2, 1, 8, 8) (128), which the module view counts as a selection
        assert value(attention, "operator_flops") - value(attention) == 2 * 512 + 128
    # the MLP's activation, SiLU: 5 per element of (2, 8, 32)
    assert value(first(name, "SiLUActivation")) == 5 * 2 * 8 * 32


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_gpt2_blocks_by_hand(attn):
    name = f"gpt2-{attn}"
    c_attn = next(r for r in rows(name) if r["path"].endswith("attn.c_attn"))
    # Conv1D(48, 16): addmm(b, x (16, 16), w (16, 48)): Linear's O(2*in - 1) + O, MACs in*O, DMAs N + P + O
    assert value(c_attn) == 16 * 48 * 31 + 16 * 48
    assert value(c_attn, "macs") == 16 * 16 * 48
    assert value(c_attn, "dmas") == 256 + (16 * 48 + 48) + 16 * 48
    # NewGELUActivation, written as eight operators: 14 per element, as nn.GELU(approximate="tanh")
    assert value(first(name, "NewGELUActivation")) == 14 * 2 * 8 * 64
    # 2 heads of width 8, a padding mask
    assert value(first(name, "GPT2Attention")) == core(2 * 2 * 8, 8, 8, 8, masks=1) == 9408


def test_encoder_attention_by_hand():
    # BERT: 2 heads of width 8, a padding mask, scaled
    assert value(first("bert-sdpa", "BertSelfAttention")) == core(32, 8, 8, 8, masks=1)
    # Whisper's encoder: the query is scaled by the module itself (q * D^-1/2, 2*8*16 = R*D products), the kernel
    # with scale 1; no mask
    assert value(first("whisper-sdpa", "WhisperAttention")) == core(32, 8, 8, 8, masks=0)
    # ViT: 16 patches + [CLS] = 17 tokens, 2 heads of width 8, no mask
    assert value(first("hf_vit-sdpa", "ViTAttention")) == core(2 * 2 * 17, 17, 8, 8, masks=0) == 41480
    # Swin: 2 images x 16 windows of 2x2 tokens, 2 heads of width 4, the relative position bias as a mask
    assert value(first("swin-sdpa", "SwinAttention")) == core(2 * 16 * 2 * 4, 4, 4, 4, masks=1) == 20992
    # Phi: partial rotary embeddings on half of each head (width 2 of 4)
    rotary = 7 * (2 * 4 * 8 * 2) // 2 + 7 * (2 * 2 * 8 * 2) // 2
    assert value(first("phi-sdpa", "PhiAttention")) == core(64, 8, 4, 4, masks=1) + rotary


def test_gemma_blocks_by_hand():
    n = 2 * 8 * 16
    # GemmaRMSNorm multiplies by (1 + w): RMSNorm's formula + P
    norm = first("gemma-sdpa", "GemmaRMSNorm")
    assert signature(norm) == "rmsnorm_offset_weight"
    assert value(norm) == 4 * n + 2 * 16 + 16
    # the word embedding times sqrt(hidden): one product per output element
    embed = first("gemma-sdpa", "GemmaTextScaledWordEmbedding")
    assert signature(embed) == "scaled_embedding" and value(embed) == n
    assert value(embed, "dmas") == 16 + 2 * n + 2 * n
    # GELUTanh runs gelu(approximate="tanh"): 14 per element of (2, 8, 32)
    assert value(first("gemma-sdpa", "GELUTanh")) == 14 * 2 * 8 * 32


@pytest.mark.parametrize("name", ["mixtral-sdpa", "qwen2_moe-eager"])
def test_moe_router_and_experts_by_hand(name):
    router = next(r for r in rows(name) if r["type"].endswith("TopKRouter"))
    assert signature(router) == "moe_router"
    # 16 tokens x 4 experts logits: 2K - 1 per logit against the mm's 2K
    assert value(router, "operator_flops") - value(router) == 16 * 4
    assert value(router, "macs") == 16 * 4 * 16
    experts = next(r for r in rows(name) if r["type"].endswith("Experts"))
    assert signature(experts) == "moe_experts"
    # 32 routed rows (16 tokens x top 2) through gate_up (32, 2 * I) and down (32, 16) grouped products
    inter = 32 if name.startswith("mixtral") else 8
    assert value(experts, "operator_flops") - value(experts) == 32 * 2 * inter + 32 * 16
    assert value(experts, "macs") == 32 * 16 * 2 * inter + 32 * inter * 16


def test_a_library_composite_with_unrecognized_products_is_unsupported_not_missing():
    # A block with children that multiplies by its own weights in a way no signature recognizes (a batched
    # product outside an attention core or an expert bank): that work would be silently missing from the module
    # view, so the block says it is not supported; its child keeps its own estimate.
    class Mixer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(2, 4, 4))
            self.act = torch.nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(torch.bmm(x, self.w))

    Mixer.__module__ = "transformers.models.mixer.modeling_mixer"  # as if transformers defined it
    rep = crawl_module(Mixer(), args=(torch.randn(2, 3, 4),))
    assert rep["totals"]["module_flops"]["status"] == "partial"
    (diag, *_) = [d for d in rep["diagnostics"] if d["code"] == "unsupported_module_metric"]
    assert diag["path"] == "" and "no signature recognizes" in diag["message"]
    assert rep["layers"][1]["metrics"]["module_flops"]["value"] == 2 * 3 * 4  # ReLU, the child


def test_wav2vec2_weight_norm_by_hand():
    row = first("wav2vec2-sdpa", "_WeightNorm")
    assert signature(row) == "weight_norm"
    # v (16, 8, 8): 16 channels in 2 groups, kernel 8; g (1, 1, 8): norm over every axis but the last
    n, c = 16 * 8 * 8, 8
    assert value(row) == 3 * n + c and value(row, "macs") == n and value(row, "dmas") == 2 * n + c


# ---------------------------------------------------------------------------------------------------------------
# Who decides
# ---------------------------------------------------------------------------------------------------------------


def test_a_caller_handler_wins_and_the_signature_fills_what_it_omits():
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRMSNorm

    case = zoo.fresh("llama-sdpa")
    handlers = {
        LlamaRMSNorm: ModuleHandler(lambda call: {"module_flops": 7}),
        LlamaAttention: ModuleHandler(lambda call: {"macs": 3}),
    }
    rep = crawl_module(case.model, args=case.args, kwargs=case.kwargs, custom_modules=handlers)
    norm = first_of(rep, "LlamaRMSNorm")
    assert norm["metrics"]["module_flops"]["value"] == 7
    assert norm["metrics"]["module_flops"]["method"].startswith("custom_module_handler:")
    # omitted on a leaf: the built-in estimate, here the signature's
    assert norm["metrics"]["macs"]["method"] == METHOD + "rmsnorm" and norm["metrics"]["macs"]["value"] == 512
    attention = first_of(rep, "LlamaAttention")
    assert attention["metrics"]["macs"]["value"] == 3
    # omitted on a composite: delegated to its children, no estimate of its own
    assert "module_flops" not in attention["metrics"]


def first_of(rep: dict, type_name: str) -> dict:
    return next(r for r in rep["layers"] if r["type"] == type_name)


def test_a_subclass_defined_elsewhere_is_not_matched():
    from transformers.activations import GELUActivation

    class MyGELU(GELUActivation):  # its forward may do anything: not the library's class
        pass

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), MyGELU())
    rep = crawl_module(model, args=(torch.randn(2, 4),))
    assert rep["totals"]["module_flops"]["status"] == "partial"
    assert {d["code"] for d in rep["diagnostics"]} == {"unsupported_module_metric"}


def test_structure_mode_matches_nothing():
    case = zoo.fresh("llama-sdpa")
    rep = crawl_module(case.model, args=case.args, kwargs=case.kwargs, mode="structure")
    assert all("module_flops" not in r["metrics"] for r in rep["layers"])


def test_matching_is_off_while_the_library_is_not_imported():
    # A class that claims to be transformers' is matched only once a module named transformers is imported: the
    # crawl looks at sys.modules once and costs nothing more when no model library is loaded.
    script = textwrap.dedent(
        """
        import sys, types, torch
        from torchscan import crawl_module
        assert "transformers" not in sys.modules
        class FakeActivation(torch.nn.Module):
            def forward(self, x):
                return torch.nn.functional.gelu(x)
        FakeActivation.__module__ = "transformers.activations"
        model = torch.nn.Sequential(FakeActivation())
        off = crawl_module(model, args=(torch.randn(2, 4),))
        sys.modules["transformers"] = types.ModuleType("transformers")
        on = crawl_module(model, args=(torch.randn(2, 4),))
        print(off["totals"]["module_flops"]["status"], on["totals"]["module_flops"]["status"],
              on["totals"]["module_flops"]["value"], on["layers"][1]["metrics"]["module_flops"]["method"])
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["partial", "complete", "40", METHOD + "activation"]
