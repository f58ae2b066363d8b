"""A Llama/Qwen2-style decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU.

Module and parameter names follow the Hugging Face ``LlamaForCausalLM`` / ``Qwen2ForCausalLM``
layout (``model.layers.N.self_attn.q_proj.weight`` …) so state dicts move between the two
without renaming, and PEFT targets the same module names in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import ModelConfig
from engine.faults import FAULTS

# torch >= 2.5 lets SDPA broadcast kv heads itself, saving a repeat_interleave copy per layer and step.
_SDPA_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        if dtype == torch.float32 and self.weight.dtype == torch.float32:
            # One fused kernel; bit-identical to the expression below in fp32, and decoding runs it
            # 2 * layers + 1 times per token.
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


_INV_FREQ: dict[tuple[int, float, torch.device], torch.Tensor] = {}


def _inv_freq(head_dim: int, theta: float, device: torch.device) -> torch.Tensor:
    # Built once per (head_dim, theta, device): decoding calls rope every step.
    key = (head_dim, theta, device)
    inv = _INV_FREQ.get(key)
    if inv is None:
        with torch.inference_mode(False):  # usable later outside inference mode too
            inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
        _INV_FREQ[key] = inv
    return inv


def rope_cos_sin(
    positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables for ``positions`` of shape [batch, seq] -> [batch, 1, seq, head_dim]."""
    inv_freq = _inv_freq(head_dim, theta, positions.device)
    freqs = positions.to(torch.float32)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@dataclass
class KVCache:
    """Per-layer key/value tensors [batch, kv_heads, seq, head_dim] and the positions seen so far."""

    keys: list[torch.Tensor | None]
    values: list[torch.Tensor | None]
    attention_mask: torch.Tensor | None = None  # [batch, seq_so_far], 1 = real token
    length: int = 0
    _next_positions: torch.Tensor | None = field(default=None, repr=False)
    # Preallocated per-layer storage that keys/values are views of (a cache is not for sharing
    # between diverging continuations: both would write into the same storage).
    _buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict, repr=False)

    @classmethod
    def empty(cls, num_layers: int) -> KVCache:
        return cls(keys=[None] * num_layers, values=[None] * num_layers)

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this step's k/v; ``keys[layer]``/``values[layer]`` are views of everything so far.

        Storage grows geometrically, so a decode step writes one slot instead of re-copying the
        whole history (what a ``torch.cat`` per step would do).
        """
        pk, pv = self.keys[layer], self.values[layer]
        old = 0 if pk is None else pk.shape[2]
        new = old + k.shape[2]
        buf = self._buffers.get(layer)
        if buf is None or buf[0].shape[2] < new or buf[0].shape[:2] != k.shape[:2] or buf[0].dtype != k.dtype:
            cap = max(new, 2 * old, 16)
            bk = k.new_empty(k.shape[0], k.shape[1], cap, k.shape[3])
            bv = v.new_empty(v.shape[0], v.shape[1], cap, v.shape[3])
            if pk is not None and pv is not None:
                bk[:, :, :old] = pk
                bv[:, :, :old] = pv
            buf = (bk, bv)
            self._buffers[layer] = buf
        buf[0][:, :, old:new] = k
        buf[1][:, :, old:new] = v
        k, v = buf[0][:, :, :new], buf[1][:, :, :new]
        self.keys[layer], self.values[layer] = k, v
        return k, v


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        h = config.hidden_size
        bias = config.attention_bias
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None,
        cache: KVCache | None,
    ) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        # ``sin`` arrives sign-folded (see DecoderLM.forward), so roll == rotate_half: one kernel, not three.
        half = self.head_dim // 2
        q = q * cos + q.roll(half, dims=-1) * sin
        k = k * cos + k.roll(half, dims=-1) * sin
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)
        groups = self.num_heads // self.num_kv_heads
        # mask None means no padding and either one query (sees everything) or no past (plain causal).
        is_causal = mask is None and s > 1
        if groups > 1 and _SDPA_GQA:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=True)
        else:
            if groups > 1:
                k = k.repeat_interleave(groups, dim=1)
                v = v.repeat_interleave(groups, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = Attention(config, layer_idx)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None, cache: KVCache | None
    ) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderModel(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


@dataclass
class CausalLMOutput:
    logits: torch.Tensor
    past_key_values: KVCache | None = None
    loss: torch.Tensor | None = None


class DecoderLM(nn.Module):
    """The engine's causal language model."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.model = DecoderModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def num_parameters(self, trainable_only: bool = False) -> int:
        seen: set[int] = set()
        total = 0
        for p in self.parameters():
            if id(p) in seen or (trainable_only and not p.requires_grad):
                continue
            seen.add(id(p))
            total += p.numel()
        return total

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: KVCache | None = None,
        use_cache: bool = False,
        labels: torch.Tensor | None = None,
    ) -> CausalLMOutput:
        """``attention_mask`` [batch, total_seq] marks real tokens (1) vs left padding (0).

        With a cache, ``attention_mask`` covers the cached tokens plus the new ones.
        """
        b, s = input_ids.shape
        cache = (
            past_key_values
            if past_key_values is not None
            else (KVCache.empty(len(self.model.layers)) if use_cache else None)
        )
        past = cache.length if cache is not None else 0
        if past + s > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence of {past + s} tokens exceeds the context window of "
                f"{self.config.max_position_embeddings} (max_position_embeddings)"
            )
        device = input_ids.device
        if attention_mask is None:
            attention_mask = torch.ones(b, past + s, dtype=torch.long, device=device)
        # Positions count real tokens only, so left-padded rows rotate exactly like unpadded ones.
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, past:]
        if cache is not None and past > 0 and FAULTS.active("kv_cache_off_by_one"):
            positions = positions + 1
        x = self.model.embed_tokens(input_ids)
        cos, sin = rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta, x.dtype)
        # rotate_half(x) * sin == roll(x, half) * sin_folded, with the first half of sin negated.
        half = self.config.head_dim // 2
        sin = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)
        mask: torch.Tensor | None = None
        if (s > 1 and past > 0) or not bool(attention_mask.bool().all()):
            causal = torch.ones(s, past + s, dtype=torch.bool, device=device).tril(diagonal=past)
            keep = causal[None, None] & attention_mask.bool()[:, None, None, :]
            # A fully padded query row would be all -inf; let it see itself to keep softmax finite.
            diag = torch.zeros(s, past + s, dtype=torch.bool, device=device)
            diag[:, past:] = torch.eye(s, dtype=torch.bool, device=device)
            keep = keep | diag[None, None]
            mask = torch.zeros(keep.shape, dtype=x.dtype, device=device).masked_fill(~keep, torch.finfo(x.dtype).min)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask, cache)
        logits = self.lm_head(self.model.norm(x))
        if cache is not None:
            cache.length = past + s
            cache.attention_mask = attention_mask
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.size(-1)).float(), labels[:, 1:].reshape(-1), ignore_index=-100
            )
        return CausalLMOutput(logits=logits, past_key_values=cache, loss=loss)


def build_model(
    config: ModelConfig, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> DecoderLM:
    """Build on ``device``; ``"meta"`` gives shapes and parameter counts without allocating."""
    with torch.device(device):
        model = DecoderLM(config)
    return model.to(dtype=dtype)
