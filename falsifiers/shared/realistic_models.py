"""Reference models with realistic weights (both exported architectures) for the export, import
and QA checkers, and what a GGUF written from one must hold."""

from __future__ import annotations

from typing import Any

import torch

from engine.config import ModelConfig, preset
from engine.model import RMSNorm

WEIGHT_STD = 0.2


# Tiny variants of the two architectures the engine exports: Llama (no bias, untied head) and
# Qwen2 (q/k/v bias, tied embeddings).
VARIANTS: dict[str, dict[str, Any]] = {
    "llama": {},
    "qwen2": {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True},
}


def variant_config(name: str, **overrides: Any) -> ModelConfig:
    return preset("tiny", **{**VARIANTS[name], **overrides})


# What real checkpoints look like, unlike a fresh init: Qwen2/Llama-3 rope_theta, a non-default
# eps, norm weights learned away from 1. A wrong theta, an unapplied norm weight or a hard-coded
# eps all pass on the defaults (theta 10000, weights 1.0) and fail here.
REALISTIC: dict[str, Any] = {"rope_theta": 1_000_000.0, "rms_norm_eps": 1e-5}


NORM_WEIGHT_STD = 0.3


def realistic_model(factory: Any, seed: int, name: str) -> Any:
    model = factory(seed, std=WEIGHT_STD, config=variant_config(name, **REALISTIC))
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, RMSNorm):
                module.weight.copy_(1.0 + NORM_WEIGHT_STD * torch.randn(module.weight.shape, generator=gen))
    return model


# llama.cpp's tensor names for the Hugging Face ones, written out here rather than taken from the
# engine's exporter, so that a wrong entry there cannot agree with itself.
GGUF_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


GGUF_GLOBAL_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def interleave_rope_rows(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """llama.cpp's llama layout rotates adjacent pairs; Hugging Face rotates the two halves of a
    head. Row 2j of a head in the GGUF is the HF head's row j, row 2j+1 its row j + d/2."""
    d = w.shape[0] // n_heads
    out = torch.empty_like(w)
    for h in range(n_heads):
        for j in range(d // 2):
            out[h * d + 2 * j] = w[h * d + j]
            out[h * d + 2 * j + 1] = w[h * d + j + d // 2]
    return out


def expected_gguf_content(model: Any) -> dict[str, torch.Tensor]:
    cfg = model.config
    llama = not cfg.attention_bias
    out: dict[str, torch.Tensor] = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name in GGUF_GLOBAL_NAMES:
            out[GGUF_GLOBAL_NAMES[name]] = tensor.float()
            continue
        _, _, layer, rest = name.split(".", 3)
        w = tensor.float()
        if llama and rest == "self_attn.q_proj.weight":
            w = interleave_rope_rows(w, cfg.num_attention_heads)
        elif llama and rest == "self_attn.k_proj.weight":
            w = interleave_rope_rows(w, cfg.num_key_value_heads)
        out[f"blk.{layer}.{GGUF_LAYER_NAMES[rest]}"] = w
    return out


TOKENIZER_TEXTS = ("hello world", "def f(x):\n    return x  +  1", "naïve café 2024")
