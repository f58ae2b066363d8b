"""Eval-mode gradient safety: an eval forward through a QLoRA model must not change later training.

On AVX512-BF16 CPUs bitsandbytes' ``Linear4bit`` repacks its weight in place on the first
eval-mode forward without grad, and the packed weight then breaks autograd for every later
training step.  The checker builds two identical QLoRA models through the engine, runs an eval
forward on one of them, and compares the LoRA gradients both produce on the same batch.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from engine.config import preset as engine_preset
from engine.lora import LoraSettings, prepare_qlora
from engine.model import build_model
from engine.quant import NF4AlignmentWarning
from pv.checkers import checker

BATCH, SEQ = 2, 16


def _twin_qlora(preset: str, rank: int, seed: int, intermediate_size: int) -> Any:
    """A QLoRA model whose weights (LoRA B included) depend only on ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        torch.manual_seed(seed)  # the base and PEFT's LoRA A init both draw from the global RNG
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        config = engine_preset(preset, intermediate_size=intermediate_size)
        model = prepare_qlora(build_model(config), LoraSettings(r=rank, alpha=2.0 * rank))
    # PEFT starts B at zero, which gives A no gradient at all; a non-zero B makes both matrices testable.
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if ".lora_B." in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    return model


def _lora_grads(model: nn.Module, ids: torch.Tensor) -> tuple[dict[str, torch.Tensor], bool]:
    """LoRA gradients of one training step (a missing gradient counts as zeros) and whether it ran."""
    model.train()
    model.zero_grad(set_to_none=True)
    try:
        out: Any = model(ids, labels=ids)
        out.loss.backward()
        ok = True
    except RuntimeError:
        ok = False
    grads = {}
    for name, p in model.named_parameters():
        if ".lora_A." in name or ".lora_B." in name:
            grads[name] = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
    return grads, ok


@checker(
    observes=["lora_grad_norm", "max_grad_diff", "eval_forward_ok", "train_forward_ok", "lora_tensors"],
    ids=["FALSIFY-EVAL-001"],
)
def gradients_after_eval(preset: str, intermediate_size: int, rank: int, seed: int = 0) -> dict[str, Any]:
    """``max_grad_diff``: largest |Δ| between the LoRA gradients of a model that ran an eval forward
    first and of its twin that did not; ``lora_grad_norm``: the former's gradient norm.

    ``intermediate_size`` overrides the preset's MLP width: the repack needs every 4-bit layer's
    output width to be a multiple of its 32-row tile (with tiny's 176 the eval forward itself fails
    under the repack, which ``eval_forward_ok`` records), and the trap worth catching is the silent one.
    """
    vocab = engine_preset(preset).vocab_size
    ids = torch.randint(0, vocab, (BATCH, SEQ), generator=torch.Generator().manual_seed(seed))
    fresh = _twin_qlora(preset, rank, seed, intermediate_size)
    evaluated = _twin_qlora(preset, rank, seed, intermediate_size)
    evaluated.eval()
    try:
        with torch.no_grad():
            evaluated(ids)
        eval_ok = True
    except (AssertionError, RuntimeError):  # bitsandbytes asserts on shapes its packed layout cannot hold
        eval_ok = False
    ref, _ = _lora_grads(fresh, ids)
    got, ok = _lora_grads(evaluated, ids)
    diffs = [float((ref[n] - got[n]).abs().max()) for n in ref]
    norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in got.values()]))) if got else 0.0
    return {
        "lora_grad_norm": norm,
        "max_grad_diff": max(diffs, default=0.0),
        "eval_forward_ok": int(eval_ok),
        "train_forward_ok": int(ok),
        "lora_tensors": len(ref),
    }
