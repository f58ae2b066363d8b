"""A Llama/Qwen2-style decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU.

Module and parameter names follow the Hugging Face ``LlamaForCausalLM`` / ``Qwen2ForCausalLM``
layout (``model.layers.N.self_attn.q_proj.weight`` …) so state dicts move between the two
without renaming, and PEFT targets the same module names in both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine import native_blocks
from engine.config import ModelConfig
from engine.faults import FAULTS
from engine.quantized import BlockLinear, Int4Linear, can_stack, stacked

# torch >= 2.5 lets SDPA broadcast kv heads itself, saving a repeat_interleave copy per layer and step.
_SDPA_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        weight = torch.ones_like(self.weight) if FAULTS.active("norm_weight_ignored") else self.weight
        if dtype == torch.float32 and weight.dtype == torch.float32:
            # One fused kernel; bit-identical to the expression below in fp32, and decoding runs it
            # 2 * layers + 1 times per token.
            return F.rms_norm(x, (x.shape[-1],), weight, self.eps)
        x32 = x.float()
        if FAULTS.active("norm_half_not_upcast"):  # pragma: no mutate
            x32 = x  # pragma: no mutate -- the defect: a half-precision norm computed in half precision
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x32.to(dtype)


def _effective_theta(theta: float) -> float:
    # the fault acts before the tables, which remember the theta they were built with
    return 10000.0 if FAULTS.active("rope_theta_ignored") else theta


def rope_cos_sin(
    positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables for ``positions`` of shape [batch, seq] -> [batch, 1, seq, head_dim]."""
    theta = _effective_theta(theta)
    device = positions.device
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    if FAULTS.active("rope_freqs_in_default_dtype"):  # pragma: no mutate
        # the defect: a range in torch's default dtype, float64 for some users
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device) / head_dim))  # pragma: no mutate
    freqs = positions.to(torch.float32)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


class RotaryEmbedding(nn.Module):
    """The model's RoPE tables, cos and sign-folded sin (first half negated) per position.

    They are buffers of the model, so they move with ``.to()`` and are freed with it, but not
    persistent ones: a checkpoint holds weights only, and the tables follow from the config.
    Decoding looks one row up per step instead of recomputing cos/sin (several kernels); the rows
    are computed exactly as :func:`rope_cos_sin` computes them, and the table grows geometrically
    with the longest position asked for, not to the whole context window.
    """

    cos: torch.Tensor
    sin_folded: torch.Tensor

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta
        self.built_theta = theta  # the theta the tables hold (a planted fault may change it)
        self.register_buffer("cos", torch.empty(0, head_dim), persistent=False)
        self.register_buffer("sin_folded", torch.empty(0, head_dim), persistent=False)

    def _apply(self, fn: Any, recurse: bool = True) -> RotaryEmbedding:
        # A move (.to, .cuda, .half, ...) starts the tables afresh where the model goes: they are
        # rebuilt on the next forward, and a model built on meta (a checkpoint loaded by
        # assignment) has no table data to copy out of.
        empty = torch.empty(0, self.head_dim)
        self.cos, self.sin_folded = empty, empty.clone()
        super()._apply(fn, recurse)
        return self

    def forward(self, length: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Tables covering positions 0..length-1 at least, in ``dtype`` on ``device`` (where the
        activations are, so a model whose weights were assigned onto a meta-built skeleton still
        gets real tables), [positions, head_dim]."""
        theta = _effective_theta(self.theta)
        have = self.cos.shape[0]
        stale = self.cos.dtype != dtype or self.cos.device != device or theta != self.built_theta
        if stale or have < length:
            size = max(length, 64, have if stale else 2 * have)
            half = self.head_dim // 2
            with torch.inference_mode(False):  # usable later outside inference mode too
                positions = torch.arange(size, device=device)[None]
                # the defect: the rows added by growing count their positions from 0 again
                if FAULTS.active("rope_table_growth_restarts_positions") and have and not stale:  # pragma: no mutate
                    restarted = positions[:, : size - have]  # pragma: no mutate
                    positions = torch.cat((positions[:, :have], restarted), dim=1)  # pragma: no mutate
                cos, sin = rope_cos_sin(positions, self.head_dim, self.theta, dtype)
                cos, sin = cos[0, 0], sin[0, 0]
                # rotate_half(x) * sin == roll(x, half) * sin_folded: one kernel instead of three.
                self.cos, self.sin_folded = cos, torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)
            self.built_theta = theta
        return self.cos, self.sin_folded


@dataclass
class KVCache:
    """Per-layer key/value tensors [batch, kv_heads, seq, head_dim] and the positions seen so far."""

    keys: list[torch.Tensor | None]
    values: list[torch.Tensor | None]
    # [batch, seq_so_far], 1 = real token; None while no cached token is padding.
    attention_mask: torch.Tensor | None = None
    length: int = 0
    # [batch, 1]: the rotary position the next real token of each row takes.
    next_positions: torch.Tensor | None = field(default=None, repr=False)
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
        buf, old = self.reserve(layer, k, k.shape[2])
        new = old + k.shape[2]
        buf[0][:, :, old:new] = k
        buf[1][:, :, old:new] = v
        return self.keys[layer], self.values[layer]  # type: ignore[return-value]

    def reserve(self, layer: int, like: torch.Tensor, count: int) -> tuple[tuple[torch.Tensor, torch.Tensor], int]:
        """Room for ``count`` more positions of ``layer`` (keys shaped like ``like`` [batch, kv_heads,
        *, head_dim]): its storage and the first new position; ``keys[layer]``/``values[layer]``
        already span the new positions, for the caller to write."""
        pk, pv = self.keys[layer], self.values[layer]
        old = 0 if pk is None else pk.shape[2]
        new = old + count
        buf = self._buffers.get(layer)
        if buf is None or buf[0].shape[2] < new or buf[0].shape[:2] != like.shape[:2] or buf[0].dtype != like.dtype:
            cap = max(new, 2 * old, 16)
            bk = like.new_empty(like.shape[0], like.shape[1], cap, like.shape[3])
            bv = like.new_empty(like.shape[0], like.shape[1], cap, like.shape[3])
            if pk is not None and pv is not None:
                bk[:, :, :old] = pk
                bv[:, :, :old] = pv
            buf = (bk, bv)
            self._buffers[layer] = buf
        self.keys[layer], self.values[layer] = buf[0][:, :, :new], buf[1][:, :, :new]
        return buf, old


def rotate(x: torch.Tensor, cos: torch.Tensor, sin_folded: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of ``x`` [batch, heads, seq, head_dim] with a sign-folded sin (see RotaryEmbedding).

    With the sign folded in, ``roll`` stands for ``rotate_half``: one kernel, not three.
    """
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin_folded


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
        return self.o_proj(self.attend(rotate(q, cos, sin), rotate(k, cos, sin), v, mask, cache))

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, cache: KVCache | None
    ) -> torch.Tensor:
        """Rotated q [b, heads, s, d], k/v [b, kv_heads, s, d] -> attention output [b, s, heads * d]."""
        b, _, s, _ = q.shape
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)
        groups = self.num_heads // self.num_kv_heads
        # mask None means no padding and either one query (sees everything) or no past (plain causal).
        is_causal = mask is None and s > 1
        if groups > 1 and _SDPA_GQA:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=True)
        else:
            if groups > 1 and FAULTS.active("gqa_fallback_heads_tiled"):  # pragma: no mutate
                # the defect: query head h reads key-value head h % kv_heads, not h // groups
                k, v, groups = k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1), 1  # pragma: no mutate
            if groups > 1:
                k = k.repeat_interleave(groups, dim=1)
                v = v.repeat_interleave(groups, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        return out.transpose(1, 2).reshape(b, s, -1)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


Project = Callable[[torch.Tensor], torch.Tensor]
NativeMatrix = tuple[torch.Tensor, str]  # a matrix's blocks as the file holds them, and their kind


@dataclass(frozen=True)
class FusedLayer:
    """One decoder layer's weights rearranged for decoding (see :func:`fused_layers`)."""

    qkv: Project  # q, k and v rows stacked
    o: Project
    gate_up: Project  # gate and up rows stacked
    down: Project
    # the norms' weights, or None where they are folded into the columns of qkv and gate_up
    input_norm: torch.Tensor | None
    post_norm: torch.Tensor | None
    eps: float
    # the four matrices' blocks and their kinds where the native kernel can read all of them: one
    # decode step of one sequence then runs as one native call (engine.native_blocks.decode_layer)
    blocks: tuple[NativeMatrix, NativeMatrix, NativeMatrix, NativeMatrix] | None = None


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = Attention(config, layer_idx)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        # Set only inside :func:`fused_layers`; a plain attribute, never in the state dict.
        self.fused: FusedLayer | None = None

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None, cache: KVCache | None
    ) -> torch.Tensor:
        if self.fused is not None:
            if self.fused.blocks is not None and mask is None and cache is not None and x.shape[:2] == (1, 1):
                step = native_blocks.decode_layer()
                if step is not None and x.dtype == torch.float32 and x.device.type == "cpu":
                    return self._decode_native(step, self.fused.blocks, x, cos, sin, cache)
            return self._forward_fused(self.fused, x, cos, sin, mask, cache)
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))

    def _forward_fused(
        self,
        f: FusedLayer,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None,
        cache: KVCache | None,
    ) -> torch.Tensor:
        """The same layer as :meth:`forward`'s modules compute, in 4 matmuls instead of 7 module calls."""
        attn = self.self_attn
        b, s, hidden = x.shape
        heads, kv_heads = attn.num_heads, attn.num_kv_heads
        h = F.rms_norm(x, (hidden,), f.input_norm, f.eps)
        qkv = f.qkv(h).view(b, s, heads + 2 * kv_heads, attn.head_dim).transpose(1, 2)
        qk = rotate(qkv[:, : heads + kv_heads], cos, sin)  # q and k rotated together
        x = x + f.o(attn.attend(qk[:, :heads], qk[:, heads:], qkv[:, heads + kv_heads :], mask, cache))
        gate, up = f.gate_up(F.rms_norm(x, (hidden,), f.post_norm, f.eps)).chunk(2, dim=-1)
        return x + f.down(F.silu(gate) * up)

    def _decode_native(
        self,
        step: native_blocks.DecodeLayer,
        blocks: tuple[NativeMatrix, NativeMatrix, NativeMatrix, NativeMatrix],
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        cache: KVCache,
    ) -> torch.Tensor:
        """One new token of one sequence through :meth:`_forward_fused`'s layer in one native call
        (its arithmetic in engine/native_blocks.cpp), the key and value written into the cache."""
        attn, f = self.self_attn, self.fused
        assert f is not None and f.input_norm is not None and f.post_norm is not None
        (keys, values), pos = cache.reserve(attn.layer_idx, x.new_empty(1, attn.num_kv_heads, 0, attn.head_dim), 1)
        # the planted faults are read each step: a contract's mutant turns them on after the fuse
        matrices = [a for raw, kind in blocks for a in (raw, native_blocks.KINDS[kind], native_blocks.defects(kind))]
        out = step(
            x.reshape(-1).contiguous(),
            f.input_norm,
            *matrices[:6],
            f.post_norm,
            *matrices[6:],
            f.eps,
            cos.reshape(-1).contiguous(),
            sin.reshape(-1).contiguous(),
            keys[0],
            values[0],
            pos,
            attn.num_heads,
            attn.num_kv_heads,
            native_blocks.layer_defects(),
        )
        native_blocks.DECODE_LAYER_CALLS[0] += 1
        return out.view(1, 1, -1)

    def fuse(self) -> FusedLayer | None:
        """This layer's :class:`FusedLayer`, or None where fusing would change what it computes.

        Only float32 layers of plain ``nn.Linear`` and :class:`RMSNorm` modules qualify: LoRA- or
        4-bit-wrapped projections keep their own forward, and other dtypes take RMSNorm's upcasting
        path, which the fused norm does not copy.  A layer whose seven projections all run a GGUF
        file's 4-bit blocks (:class:`engine.quantized.Int4Linear`) fuses too, its norms kept apart,
        where its q/k/v and its gate/up rows can be stacked (:func:`engine.quantized.can_stack`).
        """
        attn, mlp = self.self_attn, self.mlp
        linears = (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj, mlp.gate_proj, mlp.up_proj, mlp.down_proj)
        norms = (self.input_layernorm, self.post_attention_layernorm)
        if any(type(n) is not RMSNorm for n in norms):
            return None
        if self.input_layernorm.eps != self.post_attention_layernorm.eps:  # the fused path has one eps
            return None
        blocks: list[Any] = [m for m in linears if type(m) is Int4Linear]
        if len(blocks) == len(linears):
            q, k, v, _, gate, up, _ = blocks
            stackable = can_stack([q, k, v]) and can_stack([gate, up])
            float_norms = all(n.weight.dtype == torch.float32 for n in norms)
            return self._fuse_blocks(blocks) if stackable and float_norms else None
        if any(type(m) is not nn.Linear for m in linears):
            return None
        q, k, v, o, gate, up, down = (m for m in linears if isinstance(m, nn.Linear))
        weights = [m.weight for m in (q, k, v, o, gate, up, down)] + [n.weight for n in norms]
        half = any(w.dtype != torch.float32 for w in weights)
        if FAULTS.active("fused_layers_take_half_precision"):  # the defect: fp16/bf16 layers fused too
            half = False  # pragma: no mutate
        if half or o.bias is not None:
            return None
        if gate.bias is not None or up.bias is not None or down.bias is not None:
            return None
        with torch.no_grad():
            biases = [m.weight.new_zeros(m.out_features) if m.bias is None else m.bias for m in (q, k, v)]
            qkv_bias = torch.cat(biases) if any(m.bias is not None for m in (q, k, v)) else None
            qkv_weight = torch.cat((q.weight, k.weight, v.weight)) * self.input_layernorm.weight
            gate_up_weight = torch.cat((gate.weight, up.weight)) * self.post_attention_layernorm.weight
            o_weight, down_weight = o.weight.detach(), down.weight.detach()
        return FusedLayer(
            qkv=partial(F.linear, weight=qkv_weight, bias=qkv_bias),
            o=partial(F.linear, weight=o_weight),
            gate_up=partial(F.linear, weight=gate_up_weight),
            down=partial(F.linear, weight=down_weight),
            input_norm=None,
            post_norm=None,
            eps=self.input_layernorm.eps,
        )

    def _fuse_blocks(self, projections: list[Int4Linear]) -> FusedLayer:
        """The fused layer of seven 4-bit projections (q, k, v, o, gate, up, down): q/k/v and
        gate/up stacked into one kernel call each; the norms' weights cannot be folded into blocks,
        so they stay in the norms."""
        q, k, v, o, gate, up, down = projections
        qkv, gate_up = stacked([q, k, v]), stacked([gate, up])
        matrices = (qkv, o, gate_up, down)
        # the native layer adds no bias (a qwen2 layer's q/k/v biases keep it on the separate calls)
        native = [(m.kernel_blocks, m.kind) for m in matrices if m.kind in native_blocks.KINDS and m.bias is None]
        readable = [(raw, kind) for raw, kind in native if raw is not None]
        # their forward methods, not the modules: a decode step makes 4 calls a layer, and a
        # module's __call__ (its hook machinery) costs as much as a small kernel
        return FusedLayer(
            qkv=qkv.forward,
            o=o.forward,
            gate_up=gate_up.forward,
            down=down.forward,
            input_norm=self.input_layernorm.weight.detach().float().contiguous(),
            post_norm=self.post_attention_layernorm.weight.detach().float().contiguous(),
            eps=self.input_layernorm.eps,
            blocks=(readable[0], readable[1], readable[2], readable[3]) if len(readable) == len(matrices) else None,
        )


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """The block runs ``model`` in eval mode; on exit every module's training flag is as it was.

    A caller's training loop goes on after a validation or a sample as it was going: dropout (a
    LoRA adapter's included) stays on where it was on, and a module the caller froze in eval mode
    stays there (``model.train(flag)`` would set one flag for all)."""
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, flag in flags:
            module.training = flag


@contextmanager
def fused_layers(model: nn.Module) -> Iterator[None]:
    """Within the block, each eligible decoder layer runs as 4 matmuls on rearranged weights.

    Decoding one token is a handful of matrix-vector products per layer, where the overhead of
    each call is a large share of the time: q/k/v become one matmul, gate/up another, the norms'
    weights are folded into the matmul that follows them, and the layer runs without module
    calls (see :meth:`DecoderLayer.fuse` for which layers qualify).  The rearranged copies cost
    memory equal to the q/k/v and gate/up weights; they are built on entry from the weights as
    they are then, dropped on exit, and detached, so the block must run without autograd
    (``generate`` holds ``inference_mode``).  A layer of Q4_0, Q4_1 or Q8_0 blocks decoding one
    token of one unpadded sequence runs as one native call where the native kernel runs
    (:meth:`DecoderLayer._decode_native`, engine.native_blocks.decode_layer).
    """
    layers = [m for m in model.modules() if isinstance(m, DecoderLayer)]
    try:
        for layer in layers:
            layer.fused = layer.fuse()
        yield
    finally:
        for layer in layers:
            layer.fused = None


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
        self.rotary = RotaryEmbedding(config.head_dim, config.rope_theta)
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

    def num_parameters(self) -> int:
        """Parameters, a tied head once (``parameters()`` yields a shared tensor once); a layer that
        runs a GGUF file's blocks counts its matrix's weights (a tied head's are the embedding's)."""
        tied = "lm_head" if self.config.tie_word_embeddings else None
        blocks = sum(
            m.in_features * m.out_features
            for name, m in self.named_modules()
            if isinstance(m, BlockLinear) and name != tied
        )
        return blocks + sum(p.numel() for p in self.parameters())

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: KVCache | None = None,
        use_cache: bool = False,
        labels: torch.Tensor | None = None,
        logits_to_keep: int = 0,
    ) -> CausalLMOutput:
        """``attention_mask`` [batch, total_seq] marks real tokens (1) vs left padding (0).

        With a cache, ``attention_mask`` covers the cached tokens plus the new ones; left out, the
        new tokens are all real and the cached ones are as the cache recorded them (what a decode
        step wants).  ``logits_to_keep`` > 0 computes logits for that many last positions only.
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
        if logits_to_keep and labels is not None:
            raise ValueError("logits_to_keep and labels together: the loss needs every position's logits")
        device = input_ids.device
        if attention_mask is not None:
            if tuple(attention_mask.shape) != (b, past + s):
                raise ValueError(
                    f"attention_mask has shape {list(attention_mask.shape)}; expected [{b}, {past + s}] "
                    f"(the {past} cached tokens plus the {s} new ones)"
                )
            padded = not bool(attention_mask.bool().all())
            # Positions count real tokens only, so left-padded rows rotate exactly like unpadded ones.
            positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, past:]
        else:
            if cache is not None and cache.attention_mask is not None:
                attention_mask = torch.cat((cache.attention_mask, cache.attention_mask.new_ones(b, s)), dim=1)
            padded = attention_mask is not None
            if cache is not None and cache.next_positions is not None:
                # Decoding: no mask to scan each step, the cache knows where every row stands.
                step = cache.next_positions
                positions = step if s == 1 else step + torch.arange(s, device=device)
            else:
                positions = torch.arange(past, past + s, device=device).expand(b, s)
        next_positions = positions[:, -1:] + 1 if cache is not None else None
        if cache is not None and past > 0 and FAULTS.active("kv_cache_off_by_one"):
            positions = positions + 1
        x = self.model.embed_tokens(input_ids)
        # cos and sign-folded sin rows, looked up rather than recomputed; + 1: the planted
        # off-by-one fault shifts positions one past the sequence.
        cos_table, sin_table = self.rotary(past + s + 1, x.dtype, device)
        cos, sin = F.embedding(positions, cos_table)[:, None], F.embedding(positions, sin_table)[:, None]
        mask: torch.Tensor | None = None
        if padded and attention_mask is not None and s == 1 and past > 0:
            # One query row: it sees every real key, and always itself.
            keep = attention_mask != 0
            keep[:, -1] = True
            mask = x.new_zeros(b, 1, 1, past + 1).masked_fill_(~keep[:, None, None, :], torch.finfo(x.dtype).min)
        elif (s > 1 and past > 0) or padded:
            full = (
                torch.ones(b, past + s, dtype=torch.bool, device=device) if attention_mask is None else attention_mask
            )
            causal = torch.ones(s, past + s, dtype=torch.bool, device=device).tril(diagonal=past)
            keep = causal[None, None] & full.bool()[:, None, None, :]
            if FAULTS.active("padding_attended"):  # the fault lets real tokens see the padding
                keep = causal[None, None].expand(b, 1, s, past + s)  # pragma: no mutate
            # A fully padded query row would be all -inf; let it see itself to keep softmax finite.
            diag = torch.zeros(s, past + s, dtype=torch.bool, device=device)
            diag[:, past:] = torch.eye(s, dtype=torch.bool, device=device)
            keep = keep | diag[None, None]
            mask = torch.zeros(keep.shape, dtype=x.dtype, device=device).masked_fill(~keep, torch.finfo(x.dtype).min)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask, cache)
        if logits_to_keep:
            x = x[:, -logits_to_keep:]
        logits = self.lm_head(self.model.norm(x))
        if cache is not None:
            cache.length = past + s
            cache.attention_mask = attention_mask if padded else None
            cache.next_positions = next_positions
        loss = None
        if labels is not None:
            # the labels shifted left, the last position ignored, rather than the logits sliced: a
            # slice of [batch, seq - 1, vocab] is a copy of the step's largest tensor (and of its gradient)
            shifted = F.pad(labels[:, 1:], (0, 1), value=-100)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), shifted.reshape(-1), ignore_index=-100)
        return CausalLMOutput(logits=logits, past_key_values=cache, loss=loss)


def build_model(
    config: ModelConfig, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> DecoderLM:
    """Build on ``device``; ``"meta"`` gives shapes and parameter counts without allocating."""
    with torch.device(device):
        model = DecoderLM(config)
    return model.to(dtype=dtype)
