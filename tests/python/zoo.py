"""The model zoo of the operator-coverage tests (issue 3) and of bench/op_overhead.py.

A helper module, not a test module (pytest does not collect it): test_coverage.py,
test_module_families.py, bench/op_overhead.py and tools/model_support.py (which writes
docs/model-support.md from it) import it. It only builds tiny,
randomly initialised models of the families that standard training and inference run
(CNNs with BatchNorm, mobile blocks, ConvNeXt, ViT, UNet, recurrent text models, Hugging
Face transformers with SDPA and eager attention), together with their inputs and a loss,
so that one inference call and one training step (forward, loss, backward, optimizer
step, zero_grad) can be replayed on fresh copies. Everything is deterministic (fixed
seeds) and small enough that a whole training step takes milliseconds; no weights are
ever downloaded.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Case:
    """One workload: a model, how to call it, and how to turn its output into a loss."""

    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    # extra keyword arguments of the training forward only (labels for HF models)
    train_kwargs: dict[str, Any] = field(default_factory=dict)
    loss: Callable[[Any], torch.Tensor] = lambda out: out.float().pow(2).mean()


# ---------------------------------------------------------------------------------------------------------------
# Convolutional networks
# ---------------------------------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down: nn.Module = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + self.down(x))


def resnet() -> Case:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, 1, 1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
        BasicBlock(8, 8, 1),
        BasicBlock(8, 16, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    target = torch.tensor([1, 7])
    return Case(model, (torch.randn(2, 3, 16, 16),), loss=lambda out: F.cross_entropy(out, target))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeezed: int, gate: nn.Module, act: nn.Module) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.act = act
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.gate = gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    """MobileNetV2 (ReLU6, no SE) / V3 (Hardswish, SE with Hardsigmoid) / EfficientNet MBConv
    (SiLU, SE with SiLU and Sigmoid) inverted-residual block with a depthwise convolution."""

    def __init__(self, c_in: int, c_out: int, expand: int, stride: int, kind: str) -> None:
        super().__init__()
        hidden = c_in * expand
        act: type[nn.Module] = {"v2": nn.ReLU6, "v3": nn.Hardswish, "effnet": nn.SiLU}[kind]
        layers: list[nn.Module] = [
            nn.Conv2d(c_in, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            act(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            act(inplace=True),
        ]
        if kind == "v3":
            layers.append(SqueezeExcite(hidden, 8, nn.Hardsigmoid(inplace=True), nn.ReLU(inplace=True)))
        elif kind == "effnet":
            layers.append(SqueezeExcite(hidden, 4, nn.Sigmoid(), nn.SiLU(inplace=True)))
        layers += [nn.Conv2d(hidden, c_out, 1, bias=False), nn.BatchNorm2d(c_out)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


def _mobile(kind: str) -> Case:
    act = {"v2": nn.ReLU6, "v3": nn.Hardswish, "effnet": nn.SiLU}[kind]
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1, bias=False),
        nn.BatchNorm2d(8),
        act(inplace=True),
        InvertedResidual(8, 8, 2, 1, kind),
        InvertedResidual(8, 12, 3, 2, kind),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(12, 10),
    )
    target = torch.tensor([3, 4])
    return Case(model, (torch.randn(2, 3, 16, 16),), loss=lambda out: F.cross_entropy(out, target))


def mobilenet_v2() -> Case:
    return _mobile("v2")


def mobilenet_v3() -> Case:
    return _mobile("v3")


def efficientnet() -> Case:
    return _mobile("effnet")


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, channels-last LayerNorm, pointwise MLP with GELU, layer scale."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class LayerNorm2d(nn.LayerNorm):
    """ConvNeXt's channels-first LayerNorm used in the downsampling layers."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def convnext() -> Case:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 4, 4),
        LayerNorm2d(8, eps=1e-6),
        ConvNeXtBlock(8),
        LayerNorm2d(8, eps=1e-6),
        nn.Conv2d(8, 16, 2, 2),
        ConvNeXtBlock(16),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.LayerNorm(16),
        nn.Linear(16, 10),
    )
    target = torch.tensor([0, 9])
    return Case(model, (torch.randn(2, 3, 16, 16),), loss=lambda out: F.cross_entropy(out, target))


class ViT(nn.Module):
    def __init__(self, image: int = 16, patch: int = 4, dim: int = 16, depth: int = 2, heads: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        tokens = (image // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.drop = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(
            dim, heads, 2 * dim, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.patch(x).flatten(2).transpose(1, 2)
        y = torch.cat([self.cls.expand(y.shape[0], -1, -1), y], dim=1)
        y = self.encoder(self.drop(y + self.pos))
        return self.head(self.norm(y[:, 0]))


def vit() -> Case:
    target = torch.tensor([2, 5])
    return Case(ViT(), (torch.randn(2, 3, 16, 16),), loss=lambda out: F.cross_entropy(out, target))


def _double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    """Two-level encoder-decoder: max-pool down, ConvTranspose and bilinear/nearest Upsample
    up, skip connections by concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.inc = _double_conv(3, 8)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), _double_conv(8, 16))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), _double_conv(16, 16))
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv1 = _double_conv(32, 8)
        self.up2 = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.conv2 = _double_conv(16, 8)
        self.up3 = nn.Upsample(scale_factor=2, mode="nearest")
        self.outc = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        y = self.conv1(torch.cat([self.up1(x3), x2], dim=1))
        y = self.conv2(torch.cat([self.up2(y), x1], dim=1))
        return self.outc(F.avg_pool2d(self.up3(y), 2))


def unet() -> Case:
    target = torch.randn(2, 2, 16, 16)
    return Case(UNet(), (torch.randn(2, 3, 16, 16),), loss=lambda out: F.mse_loss(out, target))


class RecurrentText(nn.Module):
    def __init__(self, cell: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16, padding_idx=0)
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.rnn = rnn(16, 16, num_layers=2, batch_first=True, dropout=0.1, bidirectional=cell == "gru")
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(16 * (2 if cell == "gru" else 1), 50)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(self.embed(tokens))
        return self.head(self.drop(y))


def _recurrent(cell: str) -> Case:
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, 50, (2, 6), generator=g)
    target = torch.randint(0, 50, (2, 6), generator=g)
    return Case(
        RecurrentText(cell), (tokens,), loss=lambda out: F.cross_entropy(out.reshape(-1, 50), target.reshape(-1))
    )


def lstm() -> Case:
    return _recurrent("lstm")


def gru() -> Case:
    return _recurrent("gru")


# ---------------------------------------------------------------------------------------------------------------
# Hugging Face transformers (tiny configs, random weights, never downloaded)
# ---------------------------------------------------------------------------------------------------------------

VOCAB = 64


def _tokens(batch: int = 2, length: int = 8, seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, -2:] = 0  # one padded sequence: the attention mask is materialised
    return ids, mask


def _hf(model_cls: Any, config: Any, attn: str) -> nn.Module:
    return model_cls._from_config(config, attn_implementation=attn)


def bert(attn: str) -> Case:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    ids, mask = _tokens()
    labels = ids.masked_fill(mask == 0, -100)
    return Case(
        _hf(BertForMaskedLM, config, attn),
        (),
        {"input_ids": ids, "attention_mask": mask},
        {"labels": labels},
        loss=lambda out: out.loss,
    )


def gpt2(attn: str) -> Case:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2
    )
    ids, mask = _tokens()
    return Case(
        _hf(GPT2LMHeadModel, config, attn),
        (),
        {"input_ids": ids, "attention_mask": mask},
        {"labels": ids},
        loss=lambda out: out.loss,
    )


def llama(attn: str) -> Case:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        max_position_embeddings=32,
    )
    ids, mask = _tokens()
    return Case(
        _hf(LlamaForCausalLM, config, attn),
        (),
        {"input_ids": ids, "attention_mask": mask},
        {"labels": ids},
        loss=lambda out: out.loss,
    )


def t5(attn: str) -> Case:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=VOCAB,
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    ids, mask = _tokens()
    target, _ = _tokens(length=5, seed=3)
    return Case(
        _hf(T5ForConditionalGeneration, config, attn),
        (),
        {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": target},
        {"labels": target},
        loss=lambda out: out.loss,
    )


def whisper(attn: str) -> Case:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=8,
        d_model=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_source_positions=8,
        max_target_positions=16,
        decoder_start_token_id=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        begin_suppress_tokens=None,
        suppress_tokens=None,
    )
    features = torch.randn(2, 8, 16)  # (batch, mel bins, 2 * max_source_positions frames)
    target, _ = _tokens(length=5, seed=4)
    return Case(
        _hf(WhisperForConditionalGeneration, config, attn),
        (features,),
        {"decoder_input_ids": target},
        {"labels": target},
        loss=lambda out: out.loss,
    )


def _decoder_only(config_cls: str, model_cls: str, attn: str, **extra: Any) -> Case:
    """A causal LM of the Llama lineage (Qwen2, Mistral, Mixtral, Gemma, Phi, Qwen2-MoE) from a tiny config:
    grouped-query attention where the family has it, rotary embeddings, one padded sequence."""
    import transformers

    settings: dict[str, Any] = {
        "vocab_size": VOCAB,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32,
    }
    settings.update(extra)
    config = getattr(transformers, config_cls)(**settings)
    ids, mask = _tokens()
    return Case(
        _hf(getattr(transformers, model_cls), config, attn),
        (),
        {"input_ids": ids, "attention_mask": mask},
        {"labels": ids},
        loss=lambda out: out.loss,
    )


def qwen2(attn: str) -> Case:
    return _decoder_only("Qwen2Config", "Qwen2ForCausalLM", attn)


def mistral(attn: str) -> Case:
    return _decoder_only("MistralConfig", "MistralForCausalLM", attn, sliding_window=4)


def mixtral(attn: str) -> Case:
    return _decoder_only("MixtralConfig", "MixtralForCausalLM", attn, num_local_experts=4, num_experts_per_tok=2)


def qwen2_moe(attn: str) -> Case:
    return _decoder_only(
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        attn,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=8,
        shared_expert_intermediate_size=16,
    )


def gemma(attn: str) -> Case:
    return _decoder_only("GemmaConfig", "GemmaForCausalLM", attn, head_dim=4)


def phi(attn: str) -> Case:
    # partial rotary embeddings (half of each head), LayerNorm, a parallel attention/MLP block
    return _decoder_only("PhiConfig", "PhiForCausalLM", attn, partial_rotary_factor=0.5)


def _images(batch: int = 2, side: int = 16, seed: int = 5) -> torch.Tensor:
    return torch.randn(batch, 3, side, side, generator=torch.Generator().manual_seed(seed))


def _classifier(model: nn.Module, pixels: torch.Tensor) -> Case:
    target = torch.tensor([1, 0])
    return Case(model, (), {"pixel_values": pixels}, {"labels": target}, loss=lambda out: out.loss)


def hf_vit(attn: str) -> Case:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        image_size=16,
        patch_size=4,
        num_labels=2,
    )
    return _classifier(_hf(ViTForImageClassification, config, attn), _images())


def swin(attn: str) -> Case:
    from transformers import SwinConfig, SwinForImageClassification

    config = SwinConfig(
        image_size=16,
        patch_size=2,
        embed_dim=8,
        depths=[2, 1],
        num_heads=[2, 2],
        window_size=2,
        num_labels=2,
    )
    return _classifier(_hf(SwinForImageClassification, config, attn), _images())


def wav2vec2(attn: str) -> Case:
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    config = Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2,
    )
    audio = torch.randn(2, 400, generator=torch.Generator().manual_seed(6))
    return Case(_hf(Wav2Vec2Model, config, attn), (audio,), loss=lambda out: out.last_hidden_state.pow(2).mean())


# ---------------------------------------------------------------------------------------------------------------
# The registry, and running a case
# ---------------------------------------------------------------------------------------------------------------

BUILDERS: dict[str, Callable[[], Case]] = {
    "resnet": resnet,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3": mobilenet_v3,
    "efficientnet": efficientnet,
    "convnext": convnext,
    "vit": vit,
    "unet": unet,
    "lstm": lstm,
    "gru": gru,
}
for _attn in ("sdpa", "eager"):
    for _name, _fn in (("bert", bert), ("gpt2", gpt2), ("llama", llama), ("t5", t5), ("whisper", whisper)):
        BUILDERS[f"{_name}-{_attn}"] = functools.partial(_fn, _attn)

WORKLOADS: list[str] = list(BUILDERS)

# More Hugging Face architectures (issue 18): built-in module estimates of their blocks (test_hf_blocks.py) and
# rows of docs/model-support.md. They are not in WORKLOADS, whose training steps the coverage tests replay.
HF_EXTRA: list[str] = []
for _attn in ("sdpa", "eager"):
    for _name, _fn in (
        ("qwen2", qwen2),
        ("mistral", mistral),
        ("mixtral", mixtral),
        ("qwen2_moe", qwen2_moe),
        ("gemma", gemma),
        ("phi", phi),
        ("hf_vit", hf_vit),
        ("swin", swin),
        ("wav2vec2", wav2vec2),
    ):
        BUILDERS[f"{_name}-{_attn}"] = functools.partial(_fn, _attn)
        HF_EXTRA.append(f"{_name}-{_attn}")

# Every case of docs/model-support.md.
SUPPORT: list[str] = WORKLOADS + HF_EXTRA


@functools.lru_cache(maxsize=None)
def prototype(name: str) -> Case:
    """The case built once with a fixed seed; callers take copies (fresh()) so that
    every measured run starts from the same weights and optimizer state."""
    torch.manual_seed(0)
    return BUILDERS[name]()


def _unmasked(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k != "attention_mask"}


def fresh(name: str, masks: bool = True) -> Case:
    """A copy of the prototype. ``masks=False`` drops the attention masks of the Hugging Face
    inputs: transformers inspects mask values (``mask.all()``) to choose a path, which meta
    tensors cannot answer, so the meta comparisons use unpadded inputs on both devices."""
    case = prototype(name)
    kwargs = case.kwargs if masks else _unmasked(case.kwargs)
    return Case(copy.deepcopy(case.model), case.args, kwargs, case.train_kwargs, case.loss)


def meta_case(name: str) -> Case:
    """The case with the model built on the meta device and meta inputs (no attention masks,
    see fresh()): nothing is allocated, nothing is initialised."""
    case = prototype(name)
    with torch.device("meta"):
        torch.manual_seed(0)
        meta = BUILDERS[name]()
    to_meta = lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v  # noqa: E731
    return Case(
        meta.model,
        tuple(to_meta(a) for a in case.args),
        {k: to_meta(v) for k, v in _unmasked(case.kwargs).items()},
        {k: to_meta(v) for k, v in case.train_kwargs.items()},
        meta.loss,
    )


def inference(case: Case) -> Callable[[], Any]:
    """One evaluation forward under no_grad."""
    case.model.eval()

    def run() -> Any:
        with torch.no_grad():
            return case.model(*case.args, **case.kwargs)

    return run


OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    # CPU defaults: the single-tensor (for-loop) implementations
    "sgd": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
    # the multi-tensor (_foreach_*) and fused kernels that GPUs use by default
    "sgd-foreach": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-4, foreach=True),
    "adamw-foreach": lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
    "sgd-fused": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-4, fused=True),
    "adamw-fused": lambda p: torch.optim.AdamW(p, lr=1e-3, fused=True),
}


def training_step(case: Case, optimizer: str, steps_before: int = 1) -> Callable[[], Any]:
    """One training step: forward, loss, backward, optimizer.step(), zero_grad().

    ``steps_before`` warm-up steps run first (uncounted) so that the measured step is a
    steady-state one: optimizer state (momentum buffers, Adam moments) already exists.
    """
    model = case.model
    model.train()
    opt = OPTIMIZERS[optimizer](model.parameters())

    def step() -> Any:
        out = model(*case.args, **case.kwargs, **case.train_kwargs)
        loss = case.loss(out)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    for _ in range(steps_before):
        step()
    return step
