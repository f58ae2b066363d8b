"""Wrapping a model with LoRA leaves its base as it was: same tensors, same dtype, same values.

``apply_lora`` and ``prepare_qlora`` add fp32 LoRA matrices to a base (the update is trained in
fp32 whatever the base's precision); the base itself must stay what the caller built.  A bf16 base
cast to fp32 on the way doubles its memory and changes every product it computes, while the
adapter's own numbers look right.  Measured directly: every parameter object of the model before
wrapping is held, and after wrapping each one still in the model (``prepare_qlora`` replaces the
weights it quantizes with new NF4 parameters) must have its dtype and values bit for bit; every
parameter whose name holds PEFT's ``.lora_`` must be fp32.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.config import preset
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.model import build_model
from pv.checkers import checker

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
TARGETS = ("q_proj", "v_proj", "down_proj")


@checker(observes=["wrappings", "base_kept", "base_differing", "lora_not_fp32"], ids=["FALSIFY-LORA-018"])
def lora_leaves_base_dtype(seed: int = 0) -> dict[str, Any]:
    """apply_lora and prepare_qlora over the tiny preset built in fp32, bf16 and fp16: the base
    parameters still in the wrapped model that changed dtype or value, and the LoRA matrices that
    are not fp32, each named with its wrapping."""

    settings = LoraSettings(r=4, alpha=8, targets=TARGETS)
    base_kept = 0
    base_differing: list[str] = []
    lora_not_fp32: list[str] = []
    wrappings = 0
    for wrap in (apply_lora, prepare_qlora):
        for label, dtype in DTYPES.items():
            torch.manual_seed(seed)
            model = build_model(preset("tiny")).to(dtype)
            # held, so that no parameter created by the wrapping can take a freed one's identity
            before = [(name, p, p.dtype, p.detach().clone()) for name, p in model.named_parameters()]
            wrapped = wrap(model, settings)
            wrappings += 1
            after = {id(p) for p in wrapped.parameters()}
            where = f"{wrap.__name__} over {label}"
            for name, p, was_dtype, was in before:
                if id(p) not in after:
                    continue  # replaced by the quantizer
                base_kept += 1
                if p.dtype != was_dtype or not torch.equal(p.detach(), was):
                    base_differing.append(f"{where}: {name} is {p.dtype}, was {was_dtype}")
            lora_not_fp32 += [
                f"{where}: {name} is {p.dtype}"
                for name, p in wrapped.named_parameters()
                if ".lora_" in name and p.dtype != torch.float32
            ]
    return {
        "wrappings": wrappings,
        "base_kept": base_kept,
        "base_differing": base_differing,
        "lora_not_fp32": lora_not_fp32,
    }
