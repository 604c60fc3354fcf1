"""Mixture-of-Experts and wav2vec2: the operators their routers and weight norm run are counted.

transformers' grouped-mm experts route tokens with ``sort``, ``perm // top_k`` (``aten.floor_divide``),
``aten.histc`` and ``aten.cumsum``; wav2vec2's positional convolution is weight-normalised
(``aten._weight_norm_interface`` and its backward). The models are built from small configs with random
weights, on CPU in float32 and on meta in bfloat16 (the grouped matmul there needs it).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import torch

from torchscan import measure_flops

transformers = pytest.importorskip("transformers")


def _small(config_cls: Any, **extra: Any) -> Any:
    base = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    base.update(extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return config_cls(**base)


def mixtral() -> torch.nn.Module:
    return transformers.MixtralForCausalLM(_small(transformers.MixtralConfig, num_local_experts=4, num_experts_per_tok=2))


def qwen2_moe() -> torch.nn.Module:
    config = _small(
        transformers.Qwen2MoeConfig,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=32,
    )
    return transformers.Qwen2MoeForCausalLM(config)


def qwen3_moe() -> torch.nn.Module:
    config = _small(
        transformers.Qwen3MoeConfig, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, head_dim=8
    )
    return transformers.Qwen3MoeForCausalLM(config)


MOE: dict[str, Callable[[], torch.nn.Module]] = {"mixtral": mixtral, "qwen2_moe": qwen2_moe, "qwen3_moe": qwen3_moe}


def _build(factory: Callable[[], torch.nn.Module], device: str, dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    with torch.device(device):
        model = factory()
    return model.to(dtype).eval()


def _complete(report: dict[str, Any]) -> int:
    assert report["diagnostics"] == [], report["diagnostics"]
    assert report["total"]["status"] == "complete"
    return int(report["total"]["value"])


@pytest.mark.parametrize("name", sorted(MOE))
@pytest.mark.parametrize(("device", "dtype"), [("cpu", torch.float32), ("meta", torch.bfloat16)])
def test_moe_inference_is_complete(name: str, device: str, dtype: torch.dtype) -> None:
    model = _build(MOE[name], device, dtype)
    ids = torch.randint(0, 64, (1, 8), device=device)
    with torch.no_grad():
        report = measure_flops(lambda: model(ids))
    _complete(report)
    ops = report["by_operator"]
    # the router's operators ran and were counted: the grouped matmul, the top-k selection, and the
    # index work of sorting expert ids, perm // top_k and the histogram (0: integer or index work)
    assert ops["aten._grouped_mm"] > 0 and ops["aten.topk"] > 0
    assert ops["aten.histc"] == 0 and ops["aten.floor_divide"] == 0 and ops["aten.sort"] == 0
    # cumsum(counts, dtype=torch.int32) adds integers on CPU (float counts) as on meta (integer counts)
    assert ops["aten.cumsum"] == 0


def test_moe_training_step_is_complete_on_cpu() -> None:
    model = _build(mixtral, "cpu", torch.float32).train()
    ids = torch.randint(0, 64, (2, 8))
    report = measure_flops(lambda: model(ids, labels=ids).loss.backward())
    _complete(report)
    with torch.no_grad():
        forward = measure_flops(lambda: model(ids))
    # each grouped product (2*M*K*N) has two in the backward, the input gradient (2-D x 3-D) and the
    # experts' weight gradient (2-D x 2-D, K ragged by the offsets), of the same size
    assert report["by_operator"]["aten._grouped_mm"] == 3 * forward["by_operator"]["aten._grouped_mm"]


def _wav2vec2() -> torch.nn.Module:
    config = transformers.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        vocab_size=32,
    )
    return transformers.Wav2Vec2Model(config)


def test_wav2vec2_inference_and_training_are_complete() -> None:
    model = _build(_wav2vec2, "cpu", torch.float32)
    audio = torch.randn(1, 400)
    with torch.no_grad():
        report = measure_flops(lambda: model(audio))
    _complete(report)
    # conv weight (32, 8, 16) normalised over dim 2: N = 4096, R = 16 norms: 3N + R
    assert report["by_operator"]["aten._weight_norm_interface"] == 3 * 4096 + 16
    model.train()
    report = measure_flops(lambda: model(audio).last_hidden_state.sum().backward())
    _complete(report)
    assert report["by_operator"]["aten._weight_norm_interface_backward"] == 5 * 4096 + 3 * 16
    meta = _build(_wav2vec2, "meta", torch.float32)
    with torch.no_grad():
        _complete(measure_flops(lambda: meta(torch.randn(1, 400, device="meta"))))


@pytest.mark.parametrize("dim", [0, 2])  # the CPU kernel takes the first or the last dim
def test_weight_norm_kernel_counts_like_its_decomposition(dim: int) -> None:
    """The fused kernel's count equals what our formulas give the operators of torch's own decomposition,
    v * (g / norm_except_dim(v, 2, dim)), which is what runs where the fused kernel does not."""
    v = torch.randn(6, 5, 4)
    g = torch.randn(*(v.shape[i] if i == dim else 1 for i in range(3)))
    fused = measure_flops(lambda: torch._weight_norm_interface(v, g, dim))
    decomposed = measure_flops(lambda: v * (g / torch.norm_except_dim(v, 2, dim)))
    assert list(fused["by_operator"]) == ["aten._weight_norm_interface"]
    assert "aten._weight_norm_interface" not in decomposed["by_operator"]
    assert _complete(fused) == _complete(decomposed)
    assert _complete(fused) == 3 * v.numel() + v.shape[dim]
