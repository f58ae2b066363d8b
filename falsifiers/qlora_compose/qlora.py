"""QLoRA composition: quantize first then wrap, LoRA-only training, NF4-vs-full-precision logits,
a finite and learning epoch, and adapters that really swap.

Each checker quantizes and wraps through the engine (``engine.lora.prepare_qlora``,
``engine.quant.quantize_model``, ``engine.train.finetune``) inside its call.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from peft.tuners.lora import LoraLayer
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.config import preset as engine_preset
from engine.data import InstructionData
from engine.lora import LoraSettings, load_adapter, prepare_qlora, swap_adapter
from engine.model import build_model
from engine.multi_adapter import AdapterJob, train_adapters
from engine.quant import NF4AlignmentWarning, NF4Config, is_nf4_linear, nf4_layers, quantize_model
from engine.train import TrainConfig
from falsifiers.shared.adapter_round_trip import ROUND_TRIP_OBSERVES, adapter_round_trip
from falsifiers.shared.training import run_finetune, write_loss_evidence
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SEQ_LEN = 64


def _qlora_model(preset: str, rank: int) -> Any:
    """A fresh ``preset`` model wrapped for QLoRA by the engine (weights from the seeded global RNG)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)  # tiny's down_proj stays fp32 on CPU: documented
        return prepare_qlora(build_model(engine_preset(preset)), LoraSettings(r=rank, alpha=2.0 * rank))


def _is_peft_4bit_lora(module: nn.Module) -> bool:
    # PEFT's bnb-aware LoRA layer: the one that computes base(x) through the 4-bit kernel
    return type(module).__module__ == "peft.tuners.lora.bnb" and type(module).__name__ == "Linear4bit"


@checker(
    observes=["lora_layers", "lora_layers_on_4bit", "adapter_matrices_4bit", "nf4_settings_differing"],
    ids=["FALSIFY-QLORA-001"],
)
def wrap_order(preset: str, rank: int) -> dict[str, Any]:
    """Count LoRA layers, and those that are PEFT's 4-bit LoRA around a bitsandbytes 4-bit base.

    Quantizing after wrapping leaves PEFT's plain LoRA layer around a base that was quantized
    behind its back, and quantizes the adapter matrices too (``adapter_matrices_4bit``).
    """
    model = _qlora_model(preset, rank)
    layers: list[Any] = [m for m in model.modules() if isinstance(m, LoraLayer)]
    on_4bit = [m for m in layers if _is_peft_4bit_lora(m) and is_nf4_linear(m.get_base_layer())]
    adapters_4bit = sum(1 for m in layers for d in (m.lora_A, m.lora_B) for sub in d.values() if is_nf4_linear(sub))
    # NF4 settings of its own (blocksize 32, no double quantization) reach every quantized layer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        other = prepare_qlora(
            build_model(engine_preset(preset)),
            LoraSettings(r=rank, alpha=2.0 * rank),
            NF4Config(blocksize=32, double_quant=False),
        )
    states = [layer.weight.quant_state for _, layer in nf4_layers(other)]
    return {
        "lora_layers": len(layers),
        "lora_layers_on_4bit": len(on_4bit),
        "adapter_matrices_4bit": adapters_4bit,
        "nf4_settings_differing": sum(int(q.blocksize) != 32 or bool(q.nested) for q in states) if states else -1,
    }


@checker(observes=["lora_trainable", "non_lora_trainable"], ids=["FALSIFY-QLORA-002"])
def trainable_set(preset: str, rank: int) -> dict[str, Any]:
    """Parameter tensors with ``requires_grad`` after the engine's QLoRA wrap, LoRA and not."""
    model = _qlora_model(preset, rank)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    lora = [n for n in trainable if ".lora_A." in n or ".lora_B." in n]
    return {"lora_trainable": len(lora), "non_lora_trainable": len(trainable) - len(lora)}


def _logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        out: Any = model(ids)
    return out.logits.float()


@checker(observes=["rel_logit_diff", "nf4_layers", "adapter_steps"], ids=["FALSIFY-QLORA-003"])
def logit_agreement(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    eval_rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train one LoRA adapter on the full-precision init, then load it onto the init twice: as is,
    and after the engine quantized the base to NF4.

    ``rel_logit_diff`` = mean |logits_nf4 − logits_fp| / mean |logits_fp| over the first
    ``eval_rows`` validation prompts.
    """
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    cfg = TrainConfig(
        steps=steps, batch_size=8, seq_len=SEQ_LEN, lr=lr, warmup_steps=min(3, steps), eval_batches=1, seed=seed
    )
    run = run_finetune(
        pretrained_init, fresh_dir(tmp_path, "adapter-"), cfg, method="lora", lora=settings, data=instruction_data
    )
    if run.result is None or run.result.checkpoint is None:
        raise RuntimeError(f"training the adapter stopped early: {run.stopped}")
    adapter = run.result.checkpoint / "adapter"
    full = load_adapter(load_checkpoint(pretrained_init, device="cpu").model, adapter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        base = quantize_model(load_checkpoint(pretrained_init, device="cpu").model)
    nf4 = load_adapter(base, adapter)
    ids = instruction_data.val_input_ids[:eval_rows]
    ref, got = _logits(full, ids), _logits(nf4, ids)
    return {
        "rel_logit_diff": float((got - ref).abs().mean() / ref.abs().mean()),
        "nf4_layers": sum(1 for _ in nf4_layers(nf4)),
        "adapter_steps": len(run.losses),
    }


@checker(observes=["loss_first", "loss_last", "nonfinite_steps", "steps_run"], ids=["FALSIFY-QLORA-004"])
def epoch_trains(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    pv_artifacts: Path,
    rank: int,
    batch_size: int,
    lr: float,
    window: int,
    seed: int = 0,
) -> dict[str, Any]:
    """One epoch of ``engine.train.finetune(method="qlora")`` over the instruction pairs.

    Batches differ from step to step, so ``loss_first``/``loss_last`` are the mean training loss
    of the first/last ``window`` steps.  A non-finite step stops the engine's loop (its guard);
    it is counted, not raised.
    """
    steps = math.ceil(instruction_data.input_ids.size(0) / batch_size)
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seq_len=SEQ_LEN,
        lr=lr,
        warmup_steps=min(3, steps),
        eval_batches=2,
        seed=seed,
    )
    out = fresh_dir(tmp_path, "qlora-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        run = run_finetune(
            pretrained_init,
            out,
            cfg,
            method="qlora",
            lora=LoraSettings(r=rank, alpha=2.0 * rank),
            data=instruction_data,
        )
    write_loss_evidence(
        pv_artifacts, {"qlora": run}, f"QLoRA r={rank}, one epoch ({steps} steps)", log_dirs={"qlora": out}
    )
    return run.loss_trend(window)


@checker(observes=["swap_max_abs_diff", "adapters", "nf4_layers"], ids=["FALSIFY-QLORA-005"])
def adapter_swap(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    eval_rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train adapters ``a`` and ``b`` on one NF4 base (``engine.multi_adapter.train_adapters`` with
    ``quantize=True``; ``b`` on the rows in reverse order), then compare the logits with ``a`` active
    and with ``b`` active."""

    out = fresh_dir(tmp_path, "swap-")
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    # the same rows in another order for b: an adapter is what its own data trains (the same data, seed and
    # settings would train the same adapter, as a one-adapter run does)
    data = instruction_data
    reordered = replace(
        data, input_ids=data.input_ids.flip(0), labels=data.labels.flip(0), digest=f"{data.digest}-reversed"
    )
    jobs = [AdapterJob("a", data, out / "a", settings), AdapterJob("b", reordered, out / "b", settings)]
    cfg = TrainConfig(
        steps=steps, batch_size=8, seq_len=SEQ_LEN, lr=lr, warmup_steps=min(2, steps), eval_batches=1, seed=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        result = train_adapters(load_checkpoint(pretrained_init, device="cpu").model, jobs, cfg, quantize=True)
    ids = instruction_data.val_input_ids[:eval_rows]
    swap_adapter(result.model, "a")
    with_a = _logits(result.model, ids)
    swap_adapter(result.model, "b")
    with_b = _logits(result.model, ids)
    return {
        "swap_max_abs_diff": float((with_a - with_b).abs().max()),
        "adapters": len(jobs),
        "nf4_layers": len(list(nf4_layers(result.model))),  # the base the adapters share is 4-bit
    }


@checker(observes=ROUND_TRIP_OBSERVES, ids=["FALSIFY-QLORA-006"])
def qlora_round_trip(tmp_path: Path, rank: int, alpha: float, seed: int = 0) -> dict[str, Any]:
    """The round trip of an adapter on an NF4 base, quantized the same way each time (the
    measurement is shared with the LoRA contract's)."""
    return adapter_round_trip(tmp_path, rank, alpha, seed, nf4=True)
