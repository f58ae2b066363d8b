"""The training loop shared by pretraining, fine-tuning and distillation.

What differs between them (the model, where a batch comes from, how the loss is computed, what a
checkpoint holds) is a :class:`TrainingTask`; the loop owns the rest: AdamW, linear warm-up then
cosine decay, gradient clipping, periodic validation loss, a checkpoint folder every N steps, a
JSONL log, the NaN/Inf guard and resume.

A checkpoint folder ``step-000120/`` holds the task's weights plus ``train_state.safetensors``
(optimizer moments, RNG states) and ``train_state.json`` (step, scheduler, parameter names,
data position, config).  Nothing is pickled.  Batches are a pure function of ``(seed, step)``
(engine.data), so restoring those files continues the exact loss trajectory.  ``latest.json``
names the newest complete folder; a run stopped by a non-finite loss never replaces it.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors.torch import load_file
from torch import nn

from engine import distributed
from engine.atomic import atomic_dir
from engine.errors import NonFiniteLossError
from engine.faults import FAULTS
from engine.model import evaluating
from engine.quantized import require_float_weights
from engine.safetensors_io import save_tensors
from engine.train.state import (
    LATEST_NAME,
    LOG_NAME,
    STATE_JSON,
    STATE_TENSORS,
    JsonlLog,
    ResumeError,
    latest_checkpoint,
    state_from_files,
    state_to_files,
    write_json_atomic,
)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 100
    batch_size: int = 8
    seq_len: int = 64
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 10
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    eval_every: int = 0  # 0: only at the end
    eval_batches: int = 4
    save_every: int = 0  # 0: only at the end
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.seq_len < 2:
            raise ValueError("steps and batch_size must be >= 1 and seq_len >= 2")
        if self.warmup_steps < 0 or not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError("warmup_steps must be >= 0 and min_lr_ratio in [0, 1]")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lr_factor(step: int, cfg: TrainConfig) -> float:
    """Multiplier on ``cfg.lr`` for the update at ``step`` (0-based): linear warm-up, then cosine."""
    if step < cfg.warmup_steps and not FAULTS.active("warmup_skipped"):
        return (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def nan_fault_step(cfg: TrainConfig) -> int:
    """The step whose loss the ``nan_in_step`` fault poisons: the middle of the run."""
    return max(1, cfg.steps // 2)  # pragma: no mutate (read only while the fault is on)


class TrainingTask(Protocol):
    """What a kind of training plugs into the loop."""

    model: nn.Module

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        """Loss of training batch ``step`` (with the graph) and how many tokens it covered."""
        ...

    def val_loss(self) -> float: ...

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Write the trainable weights (and whatever is needed to rebuild them) into ``folder``."""
        ...

    def load(self, folder: Path) -> None:
        """Restore the weights ``save`` wrote."""
        ...


@dataclass
class TrainResult:
    out_dir: Path
    step0_loss: float
    losses: list[float]
    val_losses: dict[int, float]
    checkpoint: Path | None
    tokens: int
    seconds: float
    start_step: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def trainable_named_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def clip_grad_norm(params: list[nn.Parameter], clip: float) -> float:
    """The gradients' total norm before clipping, clipped to ``clip`` when it is positive; measured
    either way, since the log reports it."""
    if clip > 0:
        if FAULTS.active("grad_norm_reported_after_clip"):  # pragma: no mutate
            return min(float(torch.nn.utils.clip_grad_norm_(params, clip)), clip)  # pragma: no mutate -- the defect
        return float(torch.nn.utils.clip_grad_norm_(params, clip))
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(grads))) if grads else 0.0


def make_optimizer(params: list[nn.Parameter], cfg: TrainConfig) -> torch.optim.AdamW:
    if not params:
        raise ValueError("nothing to train: the model has no parameter with requires_grad")
    if FAULTS.active("adamw_settings_defaulted"):  # pragma: no mutate
        return torch.optim.AdamW(params, lr=cfg.lr)  # pragma: no mutate -- the defect: torch's betas, eps, decay
    return torch.optim.AdamW(
        params, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, weight_decay=cfg.weight_decay
    )


def run_training(
    task: TrainingTask,
    cfg: TrainConfig,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = False,
    manifest: Mapping[str, Any] | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train ``task.model`` for ``cfg.steps`` updates; checkpoints and ``log.jsonl`` go to ``out_dir``.

    Under ``torchrun`` (engine.distributed) each rank trains on its shard of every global batch of
    ``cfg.batch_size`` through DDP, and only rank 0 writes the log and checkpoints.
    """
    require_float_weights(task.model, "training")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = next(task.model.parameters()).device
    ctx = distributed.setup(device)
    named = trainable_named_parameters(task.model)
    names = [n for n, _ in named]
    optimizer = make_optimizer([p for _, p in named], cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, cfg))
    start = 0
    last_good: Path | None = None
    if resume:
        folder = latest_checkpoint(out)
        if folder is None:
            pointed = (out / LATEST_NAME).is_file()
            why = f"{LATEST_NAME} names a folder without {STATE_JSON}" if pointed else f"{LATEST_NAME} missing"
            raise ResumeError(f"--resume: {out} holds no complete checkpoint ({why})")
        meta = json.loads((folder / STATE_JSON).read_text())
        if meta["config"] != json.loads(json.dumps(cfg.to_dict())):
            diff = sorted(k for k in cfg.to_dict() if meta["config"].get(k) != cfg.to_dict()[k])
            raise ResumeError(f"--resume with a different training config ({', '.join(diff)}); same config needed")
        task.load(folder)
        if not FAULTS.active("resume_optimizer_state_dropped"):  # the defect: AdamW restarts from zero moments
            state_from_files(optimizer, scheduler, names, load_file(str(folder / STATE_TENSORS)), meta)
        start = int(meta["step"])
        last_good = folder
    else:
        torch.manual_seed(cfg.seed)
    wrapped = ctx.wrap(task.model)
    unsharded = distributed.shard_task(task, ctx)
    log = JsonlLog(out / LOG_NAME, append=resume) if ctx.is_main else None

    def emit(record: dict[str, Any]) -> None:
        if log is None:
            return
        log.write(record)
        if on_record is not None:
            on_record(record)

    losses: list[float] = []
    val_losses: dict[int, float] = {}
    tokens_total = 0
    step0 = float("nan")
    emit(
        {
            "kind": "start",
            "step": start,
            "resume": resume,
            "config": cfg.to_dict(),
            "trainable_params": sum(p.numel() for _, p in named),
        }
    )
    task.model.train()
    t0 = time.perf_counter()
    try:
        for step in range(start, cfg.steps):
            with ctx.forward_through(task, wrapped):
                loss, tokens = task.loss(step)
            if FAULTS.active("nan_in_step") and step == nan_fault_step(cfg):
                loss = loss * float("nan")  # pragma: no mutate
            loss, value, tokens = ctx.global_loss(loss, tokens)
            if step == 0:
                step0 = value
                emit({"kind": "step0", "step": 0, "loss": value})
            if not math.isfinite(value):
                emit(
                    {
                        "kind": "nonfinite",
                        "step": step,
                        "what": "loss",
                        "value": str(value),
                        "last_checkpoint": str(last_good) if last_good else None,
                    }
                )
                kept = None if FAULTS.active("nan_stop_forgets_checkpoint") else last_good
                raise NonFiniteLossError(step, "the loss", value, kept)
            loss.backward()
            grad_norm = clip_grad_norm([p for _, p in named], cfg.grad_clip)
            finite = math.isfinite(grad_norm)
            if FAULTS.active("nonfinite_grad_norm_applied"):  # the defect: an infinite gradient is stepped on
                finite = True  # pragma: no mutate
            if not finite:
                optimizer.zero_grad(set_to_none=True)
                emit(
                    {
                        "kind": "nonfinite",
                        "step": step,
                        "what": "grad_norm",
                        "value": str(grad_norm),
                        "last_checkpoint": str(last_good) if last_good else None,
                    }
                )
                raise NonFiniteLossError(step, "the gradient norm", grad_norm, last_good)
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(value)
            tokens_total += tokens
            done = step + 1
            emit(
                {
                    "kind": "train",
                    "step": step,
                    "loss": value,
                    "lr": lr,
                    "grad_norm": grad_norm,
                    "tokens": tokens,
                    "elapsed_s": round(time.perf_counter() - t0, 4),
                }
            )
            if (cfg.eval_every and done % cfg.eval_every == 0) or done == cfg.steps:
                val = task.val_loss()
                task.model.train()
                val_losses[done] = val
                emit({"kind": "val", "step": done, "val_loss": val})
            if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
                if ctx.is_main:
                    last_good = save_training_checkpoint(task, out, done, cfg, optimizer, scheduler, names, manifest)
                else:
                    last_good = out / f"step-{done:06d}"
                ctx.barrier()  # no rank goes on before the checkpoint exists
                emit({"kind": "checkpoint", "step": done, "path": str(last_good)})
    finally:
        if log is not None:
            log.close()
        distributed.unshard_task(task, unsharded, ctx)
        ctx.close()
    seconds = time.perf_counter() - t0
    return TrainResult(out, step0, losses, val_losses, last_good, tokens_total, seconds, start)


def save_training_checkpoint(
    task: TrainingTask,
    out: Path,
    step: int,
    cfg: TrainConfig,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LambdaLR,
    names: list[str],
    manifest: Mapping[str, Any] | None,
) -> Path:
    """Write ``out/step-NNNNNN/`` atomically and point ``latest.json`` at it."""
    name = f"step-{step:06d}"
    final = out / name
    with atomic_dir(final) as tmp:
        info = {**dict(manifest or {}), "step": step, "seed": cfg.seed, "train_config": cfg.to_dict()}
        task.save(tmp, info)
        tensors, meta = state_to_files(optimizer, scheduler, names)
        labels = {"format": "pv-engine-train-state"}
        if FAULTS.active("train_state_unlabelled"):  # pragma: no mutate
            labels = {}  # pragma: no mutate -- the defect: nothing says what the file holds
        save_tensors(tensors, str(tmp / STATE_TENSORS), metadata=labels)
        meta.update(
            {
                "step": step,
                "config": cfg.to_dict(),
                "data_position": {"seed": cfg.seed, "step": step, "samples": step * cfg.batch_size},
            }
        )
        write_json_atomic(tmp / STATE_JSON, meta)
    write_json_atomic(out / LATEST_NAME, {"folder": name, "step": step})
    return final


def mean_loss(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device) -> float:
    """The loss per learned token over ``batches``, computed in eval mode without gradients; every
    module's training flag is left as it was found (:func:`engine.model.evaluating`)."""
    if not batches:
        raise ValueError("no validation batches: the validation split is shorter than one window")
    total, count = 0.0, 0
    with evaluating(model), torch.no_grad():
        for ids, labels in batches:
            ids, labels = ids.to(device), labels.to(device)
            n = int((labels[:, 1:] != -100).sum())
            if FAULTS.active("val_loss_mean_of_batch_means"):  # pragma: no mutate
                n = 1  # pragma: no mutate -- the defect: a batch of 2 learned tokens weighs as much as one of 200
            total += float(model(ids, labels=labels).loss) * n
            count += n
    if FAULTS.active("mean_loss_leaves_eval"):  # the defect: a caller's training goes on without dropout
        model.eval()  # pragma: no mutate
    return total / count
