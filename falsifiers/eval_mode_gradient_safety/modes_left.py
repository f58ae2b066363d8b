"""What an evaluation call leaves a model in: ``mean_loss``, ``generate`` and ``qa.perplexity``.

Each runs the model in eval mode (no dropout) and hands it back as it found it: every module's
training flag, every parameter's ``requires_grad`` and torch's grad mode.  The model is the tiny
preset with a LoRA adapter whose dropout is 0.5 (so a call that computed in training mode gives
another value on every run), left in training mode by the caller with one decoder layer's MLP
frozen in eval mode (so ``model.train(flag)`` on the way out would not restore it either), and
each call's value is compared with the same call on the model put wholly in eval mode first.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.checkpoint import LoadedCheckpoint
from engine.generate import generate
from engine.lora import LoraSettings, apply_lora
from engine.qa import perplexity
from engine.tokenizer import EngineTokenizer
from engine.train import mean_loss
from pv.checkers import checker

TEXT = "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"


def _flags(model: nn.Module) -> list[bool]:
    return [m.training for m in model.modules()]


def _grads(model: nn.Module) -> list[bool]:
    return [p.requires_grad for p in model.parameters()]


@checker(
    observes=["calls", "training_flags_changed", "requires_grad_changed", "grad_mode_changed", "values_not_as_in_eval"],
    ids=["FALSIFY-EVAL-003"],
)
def evaluation_leaves_modes(
    tiny_model_factory: Any, engine_tokenizer: EngineTokenizer, seed: int = 0, dropout: float = 0.5
) -> dict[str, Any]:
    """mean_loss, greedy generate and perplexity on a LoRA model (dropout 0.5) the caller left training."""
    base = tiny_model_factory(seed, std=0.2)
    # a PeftModel, run where the engine takes a DecoderLM, as generate --adapter runs one
    model: Any = apply_lora(base, LoraSettings(r=4, alpha=8.0, dropout=dropout))
    with torch.no_grad():  # B starts at zero; a nonzero B makes the adapter, and its dropout, count
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.2, generator=torch.Generator().manual_seed(seed))
    ids = torch.tensor([engine_tokenizer.encode(TEXT, add_bos=True)])
    batches = [(ids, ids.clone())]
    loaded = LoadedCheckpoint(model, engine_tokenizer, model.config, {})
    calls = {
        "mean_loss": lambda: mean_loss(model, batches, torch.device("cpu")),
        "generate": lambda: generate(model, ids[:, :8], max_new_tokens=6).sequences.tolist(),
        "perplexity": lambda: perplexity(loaded, TEXT)[0],
    }
    out: dict[str, Any] = {"calls": len(calls), "training_flags_changed": 0, "requires_grad_changed": 0}
    out["grad_mode_changed"], out["values_not_as_in_eval"] = 0, 0
    for call in calls.values():
        model.train()
        base.model.layers[0].mlp.eval()  # the caller's own choice, kept
        flags, grads, grad_mode = _flags(model), _grads(model), torch.is_grad_enabled()
        got = call()
        out["training_flags_changed"] += _flags(model) != flags
        out["requires_grad_changed"] += _grads(model) != grads
        out["grad_mode_changed"] += torch.is_grad_enabled() != grad_mode
        model.eval()
        out["values_not_as_in_eval"] += got != call()
    return out
