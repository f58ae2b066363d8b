"""LoRA fine-tuning: it learns, the adapters move, the base stays bit-for-bit, the counts add up.

The training checkers fine-tune the session's small pretrained init (``pretrained_init``) with
``engine.train.finetune(method="lora")`` inside their call, so a fault in the engine's LoRA
wrapping (``engine.lora``) or its training loop acts on the run they measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from engine.adapters import AdapterError, find_adapter, load_adapted, merge_to_checkpoint
from engine.checkpoint import load_checkpoint, save_checkpoint, weights_digest
from engine.config import preset as engine_preset
from engine.data import InstructionData
from engine.lora import LoraSettings, apply_lora, lora_parameter_names
from engine.lora import lora_param_count as peft_lora_param_count
from engine.memory import lora_param_count as shape_lora_param_count
from engine.memory import lora_param_count_square
from engine.model import build_model
from engine.train import TrainConfig
from engine.train.tasks import finetune
from falsifiers.shared.adapter_round_trip import ROUND_TRIP_OBSERVES, adapter_round_trip
from falsifiers.shared.training import (
    base_state,
    changed_tensors,
    instruction_subset,
    run_finetune,
    write_loss_evidence,
)
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SEQ_LEN = 64


def _lora_run(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    *,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int,
) -> Any:
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    cfg = TrainConfig(
        steps=steps, batch_size=rows, seq_len=SEQ_LEN, lr=lr, warmup_steps=min(3, steps), eval_batches=1, seed=seed
    )
    out = fresh_dir(tmp_path, "lora-")
    return run_finetune(
        pretrained_init, out, cfg, method="lora", lora=settings, data=instruction_subset(instruction_data, rows)
    ), out


@checker(observes=["loss_first", "loss_last", "nonfinite_steps"], ids=["FALSIFY-LORA-001"])
def loss_halves(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    pv_artifacts: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """LoRA-fine-tune on a fixed set of ``rows`` pairs (every batch is the whole set).

    ``loss_first`` is the step-0 loss, ``loss_last`` the loss of the last step: both over the
    same rows, so they compare like with like.
    """
    run, out = _lora_run(
        pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed
    )
    write_loss_evidence(pv_artifacts, {"lora": run}, f"LoRA r={rank} on {rows} fixed pairs", log_dirs={"lora": out})
    losses = run.losses
    return {
        "loss_first": run.step0_loss,
        "loss_last": losses[-1] if losses else float("nan"),
        "nonfinite_steps": run.nonfinite_steps,
    }


@checker(observes=["lora_b_max_abs", "lora_b_tensors"], ids=["FALSIFY-LORA-002"])
def adapters_move(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Largest |B| entry after a few LoRA steps (PEFT initialises every B to zero)."""
    run, _ = _lora_run(pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed)
    params = dict(run.model.named_parameters())
    b_names = [n for n in lora_parameter_names(run.model) if ".lora_B." in n]
    return {
        "lora_b_max_abs": max((float(params[n].detach().abs().max()) for n in b_names), default=0.0),
        "lora_b_tensors": len(b_names),
    }


@checker(observes=["base_tensors", "base_tensors_changed", "base_tensors_unmatched"], ids=["FALSIFY-LORA-003"])
def base_unchanged(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare every base tensor (parameters and buffers) of the init with the same tensor after training."""
    before = base_state(load_checkpoint(pretrained_init, device="cpu").model)
    run, _ = _lora_run(pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed)
    after = base_state(run.model)
    matched = set(before) & set(after)
    return {
        "base_tensors": len(matched),
        "base_tensors_changed": len(changed_tensors(before, after)),
        "base_tensors_unmatched": len(set(before) - matched),
    }


@checker(observes=["formula_count", "peft_count", "gqa_count"], ids=["FALSIFY-LORA-004"])
def param_count(preset: str, rank: int, targets: Sequence[str]) -> dict[str, Any]:
    """LoRA parameter counts on a preset built on the meta device (nothing is allocated).

    ``formula_count``: layers × targets × rank × hidden × 2 (every target taken as hidden × hidden);
    ``gqa_count``: rank × (in + out) summed over the targeted layers' real shapes; ``peft_count``:
    what PEFT actually creates when the engine wraps the model.
    """
    config = engine_preset(preset)
    settings = LoraSettings(r=rank, alpha=2.0 * rank, targets=tuple(targets))
    bare = build_model(config, device="meta")
    gqa = shape_lora_param_count(bare, settings)
    wrapped = apply_lora(build_model(config, device="meta"), settings)
    return {
        "formula_count": lora_param_count_square(config, settings),
        "peft_count": peft_lora_param_count(wrapped),
        "gqa_count": gqa,
    }


@checker(
    observes=["step0_max_abs_diff", "logit_scale", "scaling_rel_error", "expected_scaling", "layers_checked"],
    ids=["FALSIFY-LORA-005", "FALSIFY-LORA-006"],
)
def init_and_scaling(rank: int, alpha: float, seed: int = 0) -> dict[str, Any]:
    """A fresh adapter is a no-op (B = 0: logits equal the base's exactly); with A and B set to
    known values, each wrapped layer adds exactly (alpha / r) · B A x, computed here by hand."""

    torch.manual_seed(seed)
    base = build_model(engine_preset("tiny")).eval()
    ids = torch.randint(3, base.config.vocab_size, (2, 16))
    with torch.no_grad():
        reference = base(ids).logits.clone()
    wrapped = apply_lora(base, LoraSettings(r=rank, alpha=alpha, targets=("q_proj", "v_proj"))).eval()
    with torch.no_grad():
        step0 = wrapped(ids).logits
    gen = torch.Generator().manual_seed(seed + 1)
    worst = 0.0
    layers = 0
    for module in wrapped.modules():
        lora_a: Any = getattr(module, "lora_A", None)
        lora_b: Any = getattr(module, "lora_B", None)
        base_layer: Any = getattr(module, "base_layer", None)
        if lora_a is None or lora_b is None or base_layer is None or "default" not in lora_a:
            continue
        a, b = lora_a["default"].weight, lora_b["default"].weight
        x = torch.randn(3, a.shape[1], generator=gen)
        with torch.no_grad():
            a.copy_(torch.randn(a.shape, generator=gen))
            b.copy_(torch.randn(b.shape, generator=gen))
            delta = module(x) - base_layer(x)
            expected = (alpha / rank) * (x @ a.T @ b.T)
        worst = max(worst, float((delta - expected).abs().max() / expected.abs().max()))
        layers += 1
    return {
        "step0_max_abs_diff": float((step0 - reference).abs().max()),
        "logit_scale": float(reference.abs().mean()),
        "scaling_rel_error": worst,
        "expected_scaling": alpha / rank,
        "layers_checked": layers,
    }


@checker(
    observes=["own_base_max_abs_diff", "other_base_refused", "refusal_names_both", "override_recorded"],
    ids=["FALSIFY-LORA-008"],
)
def adapter_bound_to_its_base(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """An adapter fine-tuned (2 LoRA steps, the engine's ``finetune``) on the session's init is
    applied to that init (the trained model's logits again), and refused on a base of the same
    shape whose weights differ in one tensor by 1e-3 (another fine-tune of the same architecture),
    the refusal naming both weight digests; with ``allow_other_base`` it applies and the merged
    checkpoint records the override."""

    cfg = TrainConfig(steps=2, batch_size=4, seq_len=SEQ_LEN, lr=1e-3, eval_every=0, save_every=2, seed=seed)
    run = finetune(pretrained_init, fresh_dir(tmp_path, "adapter-"), cfg, method="lora", data=instruction_data)
    adapter = find_adapter(run.out_dir)
    own = load_checkpoint(pretrained_init)
    with torch.no_grad():
        own.model.model.norm.weight.add_(1e-3)
    other = save_checkpoint(fresh_dir(tmp_path, "other-") / "model.safetensors", own.model, own.tokenizer, own.manifest)
    digests = (weights_digest(load_checkpoint(pretrained_init).model), weights_digest(load_checkpoint(other).model))
    ids = instruction_data.input_ids[:2]
    adapted, _ = load_adapted(pretrained_init, adapter)
    with torch.inference_mode():
        own_diff = float((adapted(ids).logits - run.extra["model"].eval()(ids).logits).abs().max())
    refused, names_both = False, False
    try:
        load_adapted(other, adapter)
    except AdapterError as exc:
        refused, names_both = True, all(d in str(exc) for d in digests)
    merged = merge_to_checkpoint(
        other, adapter, fresh_dir(tmp_path, "merged-") / "m.safetensors", allow_other_base=True
    )
    manifest = load_checkpoint(merged).manifest
    return {
        "own_base_max_abs_diff": own_diff,
        "other_base_refused": refused,
        "refusal_names_both": names_both,
        "override_recorded": manifest.get("base_override", {}).get("base_weights_sha256") == digests[1],
    }


@checker(observes=ROUND_TRIP_OBSERVES, ids=["FALSIFY-LORA-007"])
def lora_round_trip(tmp_path: Path, rank: int, alpha: float, seed: int = 0) -> dict[str, Any]:
    """The round trip of an adapter on a full-precision base (the measurement is shared with the
    QLoRA contract's: :func:`falsifiers.shared.adapter_round_trip.adapter_round_trip`)."""
    return adapter_round_trip(tmp_path, rank, alpha, seed)
