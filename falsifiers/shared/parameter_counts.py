"""Parameter counts written out from a model config: what bench and memory reports must state."""

from __future__ import annotations

import re

from engine.config import ModelConfig


def layer_linears(cfg: ModelConfig) -> list[tuple[int, int]]:
    """(in, out) of each linear of one decoder layer: q, k, v, o, gate, up, down."""
    h, hd = cfg.hidden_size, cfg.hidden_size // cfg.num_attention_heads
    q, kv, inter = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd, cfg.intermediate_size
    return [(h, q), (h, kv), (h, kv), (q, h), (h, inter), (h, inter), (inter, h)]


def attention_biases(cfg: ModelConfig) -> int:
    """Qwen2's q/k/v biases per layer (none for llama)."""
    hd = cfg.hidden_size // cfg.num_attention_heads
    return (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * hd if cfg.attention_bias else 0


def embedding_parameters(cfg: ModelConfig) -> int:
    """The token embedding, and the head unless it is tied to it."""
    return cfg.vocab_size * cfg.hidden_size * (1 if cfg.tie_word_embeddings else 2)


def parameter_count(cfg: ModelConfig) -> int:
    """A llama/qwen2 decoder's parameters, from its shape: embeddings, per layer q/k/v/o (qwen2: q/k/v
    biases), gate/up/down and two norms, the final norm, and an untied head."""
    layer = sum(i * o for i, o in layer_linears(cfg)) + attention_biases(cfg) + 2 * cfg.hidden_size
    return embedding_parameters(cfg) + cfg.num_hidden_layers * layer + cfg.hidden_size


def lora_count(cfg: ModelConfig, r: int) -> int:
    """LoRA on the default targets (q_proj, v_proj): r x (in + out) per wrapped projection."""
    h, hd = cfg.hidden_size, cfg.hidden_size // cfg.num_attention_heads
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    return cfg.num_hidden_layers * r * ((h + q) + (h + kv))


def table_cells(line: str) -> list[str]:
    """One row of a plain-text table the engine prints: its cells, split on runs of two or more spaces."""
    return re.split(r"\s{2,}", line.strip())
