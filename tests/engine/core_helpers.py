"""Small shared builders for the engine-core tests (tokenizer, checkpoint, interop, generation)."""

from __future__ import annotations

import torch

from engine.config import ModelConfig, preset
from engine.model import DecoderLM, build_model
from engine.tokenizer import EngineTokenizer, cached_tokenizer


def tiny_config(**overrides: object) -> ModelConfig:
    return preset("tiny", **overrides)


def qwen2_tiny_config(**overrides: object) -> ModelConfig:
    base: dict[str, object] = {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True}
    base.update(overrides)
    return preset("tiny", **base)


def tiny_model(config: ModelConfig | None = None, seed: int = 0, std: float = 0.02) -> DecoderLM:
    """A seeded random model; a larger ``std`` spreads the logits so greedy choices are not near-ties."""
    torch.manual_seed(seed)
    model = build_model(config or tiny_config())
    if std != 0.02:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() == 2 or name.endswith("bias"):
                    p.normal_(0.0, std)
    return model.eval()


def tiny_tokenizer(vocab_size: int = 512) -> EngineTokenizer:
    return cached_tokenizer(vocab_size)
