"""Session fixtures shared by the engine contracts' checkers.

Only immutable inputs live here: a fixture hands out things a checker reads (the tokenizer) or a
factory that builds a fresh object per call (models), never an artefact built once that a mutant
run would then inherit unchanged.  Faults act inside the engine while a checker runs, so a
checker builds the thing under test itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from engine.config import ModelConfig, preset
from engine.model import DecoderLM, build_model
from engine.tokenizer import EngineTokenizer, cached_tokenizer

TOKENIZER_VOCAB = 512
TinyModelFactory = Callable[..., DecoderLM]


@pytest.fixture(scope="session")
def engine_tokenizer() -> EngineTokenizer:
    """The engine's 512-token BPE tokenizer (trained once, then read from the engine's cache)."""
    return cached_tokenizer(TOKENIZER_VOCAB)


def make_tiny_model(
    seed: int = 0, *, std: float = 0.02, config: ModelConfig | None = None, **overrides: Any
) -> DecoderLM:
    """A fresh ``tiny``-preset model (eval mode) whose weights depend only on ``seed``.

    ``std`` re-draws every matrix and bias from N(0, std); the engine's 0.02 init gives nearly
    uniform logits, so checkers that compare greedy choices or logit differences ask for a wider
    spread to make attention (and its position handling) matter.  ``overrides`` change preset keys.
    The global RNG is left as it was: the weights come from a private generator.
    """
    cfg = config if config is not None else preset("tiny", **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(cfg)
        if std != 0.02:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if p.dim() == 2 or name.endswith("bias"):
                        p.normal_(0.0, std)
    return model.eval()


@pytest.fixture(scope="session")
def tiny_model_factory() -> TinyModelFactory:
    """``factory(seed=0, *, std=0.02, config=None, **preset_overrides) -> DecoderLM`` (a new model each call)."""
    return make_tiny_model
