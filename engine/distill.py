"""Knowledge distillation: a frozen teacher's softened distribution teaches a student.

loss = alpha · T² · KL(softmax(teacher/T) ‖ softmax(student/T)) + (1 − alpha) · CE(student, labels)

The T² keeps the KL gradient on the same scale as the CE gradient whatever the temperature
(Hinton et al. 2015).  The teacher is put in eval mode with every parameter frozen and runs under
``no_grad``; an NF4 teacher stays NF4 (its forward dequantizes block by block inside
bitsandbytes, never into a full-precision copy of the model).  A run whose teacher and student
hold the same weights teaches nothing and is refused unless ``allow_same=True``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.config import ModelConfig
from engine.data import TokenData, tokenize_corpus
from engine.device import nf4_device, resolve_device
from engine.errors import EngineError
from engine.faults import FAULTS
from engine.model import DecoderLM, build_model
from engine.quant import NF4Config, dequantize_model, quantize_model
from engine.train import TrainConfig, TrainResult, WholeModelTask, run_training


class DistillationRefused(EngineError, ValueError):
    """A distillation run that cannot teach anything (or cannot run) as configured."""


def weights_fingerprint(model: nn.Module) -> str:
    """sha256 over parameter names, shapes, dtypes and bytes (a tied tensor counted once: named_parameters
    yields each parameter once)."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        t = p.detach().to("cpu").contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def freeze_teacher(teacher: nn.Module) -> nn.Module:
    """Eval mode, no parameter trainable (fault ``teacher_grads_on`` leaves gradients on)."""
    teacher.eval()
    if not FAULTS.active("teacher_grads_on"):
        teacher.requires_grad_(False)
    return teacher


def prepare_teacher(
    teacher: nn.Module, *, quantize: bool = False, nf4: NF4Config | None = None, device: torch.device | None = None
) -> nn.Module:
    """Optionally quantize the teacher to NF4 (and keep it so), then freeze it."""
    if quantize:
        # the defect: the teacher is quantized with the default NF4 settings, not the ones given
        if FAULTS.active("distill_teacher_nf4_settings_ignored"):  # pragma: no mutate
            nf4 = None  # pragma: no mutate
        quantize_model(teacher, nf4, device)
        if FAULTS.active("teacher_dequantized"):
            dequantize_model(teacher)  # the defect: a full-precision copy replaces the NF4 weights  # pragma: no mutate
    return freeze_teacher(teacher)


def check_loss_settings(temperature: float, alpha: float) -> None:
    """Refuse a temperature that is not > 0 or an alpha outside [0, 1] (ValueError naming it)."""
    floor = 0.0
    if FAULTS.active("distill_temperature_one_refused"):  # the defect: plain distillation (T = 1) refused
        floor = 1.0  # pragma: no mutate
    if temperature <= floor:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    temperature: float,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, kl, ce) over the positions whose next-token label is not ignored."""
    check_loss_settings(temperature, alpha)
    if student_logits.size(-1) != teacher_logits.size(-1):
        raise DistillationRefused(
            f"teacher vocabulary {teacher_logits.size(-1)} != student vocabulary {student_logits.size(-1)}"
        )
    s = student_logits[:, :-1].float()
    t = teacher_logits[:, :-1].float()
    target = labels[:, 1:]
    mask = target != -100
    if FAULTS.active("distill_mask_ignored"):  # the defect: padding and prompt positions enter the KL
        mask = torch.ones_like(mask)  # pragma: no mutate
    s_log = F.log_softmax(s / temperature, dim=-1)
    t_log = F.log_softmax(t / temperature, dim=-1)
    kl_per_pos = (t_log.exp() * (t_log - s_log)).sum(-1)
    scale = 1.0 if FAULTS.active("distill_t2_missing") else temperature**2
    kl = (kl_per_pos * mask).sum() / mask.sum().clamp(min=1) * scale
    ce = F.cross_entropy(s.reshape(-1, s.size(-1)), target.reshape(-1), ignore_index=-100)
    return alpha * kl + (1.0 - alpha) * ce, kl.detach(), ce.detach()


class DistillTask(WholeModelTask):
    """Plugs distillation into :func:`engine.train.run_training`."""

    def __init__(
        self,
        student: nn.Module,
        teacher: nn.Module,
        tokenizer: Any,
        data: Any,
        cfg: TrainConfig,
        temperature: float,
        alpha: float,
    ) -> None:
        self.model, self.teacher, self.tokenizer, self.data, self.cfg = student, teacher, tokenizer, data, cfg
        self.temperature, self.alpha = temperature, alpha
        self.device = next(student.parameters()).device
        self.last_kl = float("nan")
        self.last_ce = float("nan")

    def _batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if hasattr(self.data, "labels"):  # instruction pairs
            ids, labels = self.data.batch(step, self.cfg.batch_size, self.cfg.seed)
            if FAULTS.active("distill_pairs_prompt_learned"):  # the defect: prompt and padding are labels too
                labels = ids  # pragma: no mutate
        else:
            ids = self.data.batch(step, self.cfg.batch_size, self.cfg.seq_len, self.cfg.seed)
            labels = ids
        return ids.to(self.device), labels.to(self.device)

    def teacher_logits(self, ids: torch.Tensor) -> torch.Tensor:
        if FAULTS.active("teacher_grads_on"):
            return self.teacher(ids).logits  # the defect: graph kept through the teacher  # pragma: no mutate
        with torch.no_grad():
            return self.teacher(ids).logits

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        ids, labels = self._batch(step)
        t_logits = self.teacher_logits(ids)
        loss, kl, ce = distillation_loss(self.model(ids).logits, t_logits, labels, self.temperature, self.alpha)
        self.last_kl, self.last_ce = float(kl), float(ce)
        return loss, int((labels[:, 1:] != -100).sum())

    def run_manifest(self) -> dict[str, Any]:
        return {**super().run_manifest(), "temperature": self.temperature, "alpha": self.alpha}


def student_of_shape(shape: ModelConfig, teacher: ModelConfig) -> ModelConfig:
    """A student config of ``shape``'s layers and widths with ``teacher``'s vocabulary, special ids
    and context length: the student is saved with the teacher's tokenizer and learns its
    distribution over the same tokens, so only the shape is the student's own."""
    carried = {
        "vocab_size": teacher.vocab_size,
        "bos_token_id": teacher.bos_token_id,
        "eos_token_id": teacher.eos_token_id,
        "pad_token_id": teacher.pad_token_id,
        "max_position_embeddings": teacher.max_position_embeddings,
        "rope_theta": teacher.rope_theta,
    }
    if FAULTS.active("distill_student_keeps_preset_context"):  # the defect: the preset's context and RoPE base
        del carried["max_position_embeddings"], carried["rope_theta"]  # pragma: no mutate
    return shape.replace(**carried)


def check_pair(teacher: DecoderLM, student: DecoderLM, *, allow_same: bool) -> None:
    """Refuse identical teacher and student weights (unless allowed) and mismatched vocabularies."""
    if teacher is student:
        raise DistillationRefused("teacher and student are the same module object")
    t_vocab, s_vocab = teacher.config.vocab_size, student.config.vocab_size
    if t_vocab != s_vocab and not FAULTS.active("distill_vocab_unchecked"):  # the fault: refused only at step 0
        raise DistillationRefused(f"teacher vocab_size {t_vocab} != student vocab_size {s_vocab}")
    check_identity = not allow_same and not FAULTS.active("distill_identity_check_off")  # the fault skips it
    if check_identity and weights_fingerprint(teacher) == weights_fingerprint(student):
        raise DistillationRefused(
            "teacher and student hold identical weights: distillation would teach nothing "
            "(pass allow_same=True / --allow-same to run anyway)"
        )


def distill(
    teacher_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    cfg: TrainConfig,
    *,
    student_config: ModelConfig | None = None,
    student_init: str | os.PathLike[str] | None = None,
    temperature: float = 2.0,
    alpha: float = 0.5,
    quantize_teacher: bool = False,
    nf4: NF4Config | None = None,
    allow_same: bool = False,
    data: TokenData | None = None,
    resume: bool = False,
    device: str | torch.device | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Distill the checkpoint at ``teacher_path`` into a new (``student_config``) or loaded student."""

    # Before anything is loaded or written: the loss would refuse them only at the first step,
    # after the run folder and its log exist.
    check_loss_settings(temperature, alpha)
    dev = resolve_device(device)
    if quantize_teacher:  # teacher and student share one device: the CPU where bitsandbytes has no kernels
        dev = nf4_device(dev)
    torch.manual_seed(cfg.seed)
    teacher_ckpt = load_checkpoint(Path(teacher_path), device=dev)
    if student_init is not None:
        student: DecoderLM = load_checkpoint(Path(student_init), device=dev).model
    elif student_config is not None:
        student = build_model(student_config, device=dev)
    else:
        raise ValueError("distill needs a student config or a student checkpoint")
    check_pair(teacher_ckpt.model, student, allow_same=allow_same)
    teacher = prepare_teacher(teacher_ckpt.model, quantize=quantize_teacher, nf4=nf4, device=dev)
    student.requires_grad_(True)
    student.train()
    data = data if data is not None else tokenize_corpus(teacher_ckpt.tokenizer)
    task = DistillTask(student, teacher, teacher_ckpt.tokenizer, data, cfg, temperature, alpha)
    result = run_training(
        task,
        cfg,
        out_dir,
        resume=resume,
        on_record=on_record,
        manifest={
            **(manifest or {}),
            "kind": "distill",
            "teacher": str(teacher_path),
            "teacher_nf4": quantize_teacher,
        },
    )
    result.extra.update({"model": student, "teacher": teacher, "kl": task.last_kl, "ce": task.last_ce})
    return result
