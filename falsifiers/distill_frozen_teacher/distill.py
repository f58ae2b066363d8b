"""Distillation from a frozen teacher: identical pairs refused, the teacher frozen and (when NF4)
still 4-bit afterwards, and the distillation loss falling.

Every checker runs ``engine.distill.distill`` inside its call with the session's pretrained init
as the teacher and a from-scratch tiny student (or, for the refusal, the init as both).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.config import preset as engine_preset
from engine.data import TokenData
from engine.distill import DistillationRefused, distill, distillation_loss
from engine.quant import NF4AlignmentWarning, NF4Config, is_nf4_linear
from engine.train import NonFiniteLossError, TrainConfig, TrainResult
from falsifiers.shared.training import Run, base_state, changed_tensors, write_loss_evidence
from falsifiers.shared.weight_bytes import linear_weight_bytes
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BATCH, SEQ_LEN = 8, 64


def _cfg(steps: int, seed: int) -> TrainConfig:
    return TrainConfig(
        steps=steps, batch_size=BATCH, seq_len=SEQ_LEN, lr=3e-3, warmup_steps=min(2, steps), eval_batches=1, seed=seed
    )


def _distill(
    pretrained_init: Path, data: TokenData, out: Path, cfg: TrainConfig, **kwargs: Any
) -> tuple[TrainResult | None, Run]:
    """Distil the init into a fresh tiny student; a NaN/Inf stop is recorded, not raised."""
    records: list[dict[str, Any]] = []
    kwargs.setdefault("student_config", engine_preset("tiny"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NF4AlignmentWarning)
            result = distill(pretrained_init, out, cfg, data=data, device="cpu", on_record=records.append, **kwargs)
    except NonFiniteLossError as exc:
        return None, Run(None, records, exc)
    return result, Run(result, records)


@checker(observes=["refused", "refusal_names_identity"], ids=["FALSIFY-DISTILL-001"])
def identical_refused(pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, seed: int = 0) -> dict[str, Any]:
    """Distil the init into a student loaded from the same checkpoint (identical weights)."""
    try:
        _distill(
            pretrained_init,
            pretrain_data,
            fresh_dir(tmp_path),
            _cfg(1, seed),
            student_config=None,
            student_init=pretrained_init,
        )
    except DistillationRefused as exc:
        return {"refused": 1, "refusal_names_identity": int("identical" in str(exc))}
    return {"refused": 0, "refusal_names_identity": 0}


@checker(
    observes=["teacher_params_with_grad", "teacher_tensors_changed", "teacher_tensors"], ids=["FALSIFY-DISTILL-002"]
)
def teacher_frozen(
    pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """After ``steps`` distillation steps: teacher parameters that require or hold a gradient, and
    teacher tensors that differ in any bit from the checkpoint's."""
    before = base_state(load_checkpoint(pretrained_init, device="cpu").model)
    result, run = _distill(pretrained_init, pretrain_data, fresh_dir(tmp_path), _cfg(steps, seed))
    if result is None:
        raise RuntimeError(f"distillation stopped early: {run.stopped}")
    teacher: nn.Module = result.extra["teacher"]
    with_grad = sum(1 for p in teacher.parameters() if p.requires_grad or p.grad is not None)
    after = base_state(teacher)
    return {
        "teacher_params_with_grad": with_grad,
        "teacher_tensors_changed": len(changed_tensors(before, after)),
        "teacher_tensors": len(set(before) & set(after)),
    }


@checker(
    observes=[
        "teacher_4bit_layers",
        "teacher_full_precision_linears",
        "teacher_linear_bytes_per_param",
        "teacher_linear_bytes_per_param_with_tables",
    ],
    ids=["FALSIFY-DISTILL-003"],
)
def teacher_stays_quantized(
    pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Distil from an NF4 teacher, then inspect the teacher the run used.

    Counted: every linear layer except ``lm_head`` (NF4Config.skip) and those the engine reports
    as kept in full precision on CPU.  ``teacher_linear_bytes_per_param`` charges the storage that
    grows with the weights (codes, absmax, nested absmax); ``..._with_tables`` adds each layer's
    constant code tables (about 1.1 KB a layer, which on the tiny preset's 2k–11k-weight layers is
    a visible share and on real layers is not).
    """
    result, run = _distill(
        pretrained_init, pretrain_data, fresh_dir(tmp_path), _cfg(steps, seed), quantize_teacher=True
    )
    if result is None:
        raise RuntimeError(f"distillation stopped early: {run.stopped}")
    teacher: nn.Module = result.extra["teacher"]
    skip = NF4Config().skip
    kept = set(getattr(teacher, "nf4_kept_full_precision", ()))
    counted = [
        (name, m)
        for name, m in teacher.named_modules()
        if (is_nf4_linear(m) or type(m) is nn.Linear) and name.rsplit(".", 1)[-1] not in skip and name not in kept
    ]
    params = sum(int(m.in_features) * int(m.out_features) for _, m in counted)
    scaling = sum(linear_weight_bytes(m, tables=False) for _, m in counted)
    with_tables = sum(linear_weight_bytes(m, tables=True) for _, m in counted)
    return {
        "teacher_4bit_layers": sum(1 for _, m in counted if is_nf4_linear(m)),
        "teacher_full_precision_linears": sum(1 for _, m in counted if type(m) is nn.Linear),
        "teacher_linear_bytes_per_param": scaling / params if params else float("nan"),
        "teacher_linear_bytes_per_param_with_tables": with_tables / params if params else float("nan"),
    }


@checker(observes=["loss_first", "loss_last", "nonfinite_steps", "steps_run"], ids=["FALSIFY-DISTILL-004"])
def loss_decreases(
    pretrained_init: Path,
    pretrain_data: TokenData,
    tmp_path: Path,
    pv_artifacts: Path,
    steps: int,
    temperature: float,
    window: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Distil for ``steps`` steps at ``temperature``; ``loss_first``/``loss_last`` are the mean
    distillation loss (α·T²·KL + (1−α)·CE) of the first/last ``window`` steps."""
    out = fresh_dir(tmp_path)
    _, run = _distill(pretrained_init, pretrain_data, out, _cfg(steps, seed), temperature=temperature)
    write_loss_evidence(pv_artifacts, {"distill": run}, f"distillation, T={temperature:g}", log_dirs={"distill": out})
    return run.loss_trend(window)


@checker(
    observes=["loss_rel_error", "kl_rel_error", "positions_masked"],
    ids=["FALSIFY-DISTILL-005", "FALSIFY-DISTILL-006"],
)
def loss_matches_reference(
    temperature: float, alpha: float, vocab: int = 64, seq_len: int = 12, seed: int = 0
) -> dict[str, Any]:
    """The engine's distillation loss against Hinton et al.'s, computed here with torch's own
    ``kl_div``: T² · KL(teacher_T ‖ student_T) averaged over the positions whose label is not
    ignored, mixed with cross entropy as ``alpha · KL + (1 − alpha) · CE``.  A third of the labels
    are -100 (prompt and padding)."""

    gen = torch.Generator().manual_seed(seed)
    student = torch.randn(2, seq_len, vocab, generator=gen) * 2
    teacher = torch.randn(2, seq_len, vocab, generator=gen) * 2
    labels = torch.randint(0, vocab, (2, seq_len), generator=gen)
    labels[:, : seq_len // 3] = -100
    loss, kl, _ = distillation_loss(student, teacher, labels, temperature, alpha)

    s = student[:, :-1].reshape(-1, vocab)
    t = teacher[:, :-1].reshape(-1, vocab)
    target = labels[:, 1:].reshape(-1)
    keep = target != -100
    per_pos = F.kl_div(
        F.log_softmax(s / temperature, -1), F.log_softmax(t / temperature, -1), log_target=True, reduction="none"
    ).sum(-1)
    ref_kl = per_pos[keep].mean() * temperature**2
    ref_ce = F.cross_entropy(s[keep], target[keep])
    ref = alpha * ref_kl + (1 - alpha) * ref_ce
    return {
        "loss_rel_error": float((loss - ref).abs() / ref.abs()),
        "kl_rel_error": float((kl - ref_kl).abs() / ref_kl.abs()),
        "positions_masked": int((~keep).sum()),
    }
