"""A memory measurement measures what it was asked to: the base dtype, the LoRA settings and the
number of steps a request names, and a measurement that fails says why instead of giving a number.

FALSIFY-QMEM-006 measures the defaults' neighbourhood (an fp32 base, rank 8 on q and v, 2 steps) in
a fresh interpreter, where a request that lost its base dtype or its LoRA settings reads the same.
Here ``measure_method`` runs on requests that differ from the defaults, each in a fresh interpreter
too: in this process the reading is RSS growth over whatever the suite allocated and freed before
it (the allocator hands freed pages back to a new request before the system counts new ones), so an
fp16 full fine-tune measured after 180 other falsifiers in one process read 0.69 of the parameter
bytes for training instead of 1.5. Each reading is compared with the bytes written out here from
the shape built on the meta device: an fp16 base holds half the fp32 parameter bytes and trains
with fp16 gradients and moments (3 x 2 bytes a parameter); rank 64 on all seven projections adds r
x (in + out) parameters per linear, trained with a gradient and two fp32 moments.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.config import preset as engine_preset
from engine.lora import LoraSettings
from engine.memory import measure_method
from engine.model import build_model
from pv.checkers import checker

ALL_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_bytes(model: nn.Module, rank: int, targets: tuple[str, ...]) -> int:
    """fp32 bytes of the A (r x in) and B (out x r) matrices LoRA adds to each targeted linear."""
    return sum(
        4 * rank * (m.in_features + m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in targets
    )


REFUSAL = "measure at least 2 steps: the optimizer state only exists after the first"


@checker(
    observes=[
        "param_bytes",
        "fp16_model_ratio",
        "fp16_training_ratio",
        "fp16_steps",
        "lora_model_extra_ratio",
        "lora_training_ratio",
        "default_lora_measured",
        "failure",
        "in_process_refusal",
    ],
    ids=["FALSIFY-QMEM-008"],
)
def measurement_follows_the_request(preset: str = "small", rank: int = 64) -> dict[str, Any]:
    """measure_method in a fresh interpreter: a full fine-tune on an fp16 base for 3 steps, LoRA of
    ``rank`` on all seven projections of an fp32 base, LoRA with no settings given, and in a fresh
    interpreter a request of 1 step, which the child refuses; the same request in this process."""

    config = engine_preset(preset)
    meta = build_model(config, device="meta")
    param_bytes = 4 * sum(p.numel() for p in {id(p): p for p in meta.parameters()}.values())
    added = lora_bytes(meta, rank, ALL_PROJECTIONS)
    out: dict[str, Any] = {"param_bytes": param_bytes}

    fp16 = measure_method(config, "full", base_dtype=torch.float16, steps=3, fresh_process=True)
    out["fp16_model_ratio"] = fp16.model_bytes / param_bytes
    out["fp16_training_ratio"] = fp16.training_bytes / param_bytes
    out["fp16_steps"] = fp16.steps
    wide = measure_method(
        config, "lora", lora=LoraSettings(r=rank, targets=ALL_PROJECTIONS), base_dtype=torch.float32, fresh_process=True
    )
    out["lora_model_extra_ratio"] = (wide.model_bytes - param_bytes) / added
    out["lora_training_ratio"] = wide.training_bytes / (3 * added)
    default = measure_method(config, "lora", base_dtype=torch.float32, fresh_process=True)
    out["default_lora_measured"] = default.steps == 2 and default.model_bytes > 0
    try:
        measure_method(config, "full", steps=1, fresh_process=True)
        out["failure"] = "no error"
    except RuntimeError as exc:
        message = str(exc)
        out["failure"] = [
            message.startswith("memory measurement child failed (exit 1): "),
            f"ValueError: {REFUSAL}" in message,
        ]
    # the same request in this process: the refusal itself
    try:
        measure_method(config, "full", steps=1)
        out["in_process_refusal"] = "no error"
    except ValueError as exc:
        out["in_process_refusal"] = (
            str(exc) == "measure at least 2 steps: the optimizer state only exists after the first"
        )
    return out
