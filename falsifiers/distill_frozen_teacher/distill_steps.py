"""What a distillation run learns from at each step, and what its validation measures, on token
streams and on instruction pairs.

``engine.distill.distill`` takes either data: token windows (every next token is a label) or
instruction pairs (only the response's tokens are labels).  Each run here starts from a student
saved to a file (so its initial weights are known) and its log is read against figures computed
here: each step's tokens are the labelled next-token positions of the batch the data gives for that
step and seed; step 0's loss is Hinton et al.'s loss on that batch, written out with torch's
``kl_div`` and ``cross_entropy`` over the labelled positions (T² · KL · alpha + CE · (1 − alpha)),
from the initial student and the frozen teacher; the last validation loss is the final student's
next-token cross entropy over the labelled positions of the first ``eval_batches`` validation
batches, weighted by their count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.distill import distill
from engine.train import TrainConfig
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEMPERATURE, ALPHA = 2.0, 0.7


def _reference_loss(student: Any, teacher: Any, ids: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        s, t = student(ids).logits[:, :-1].float(), teacher(ids).logits[:, :-1].float()
    vocab = s.size(-1)
    target = labels[:, 1:].reshape(-1)
    keep = target != -100
    s, t = s.reshape(-1, vocab)[keep], t.reshape(-1, vocab)[keep]
    kl = (
        F.kl_div(
            F.log_softmax(s / TEMPERATURE, -1), F.log_softmax(t / TEMPERATURE, -1), log_target=True, reduction="none"
        )
        .sum(-1)
        .mean()
        * TEMPERATURE**2
    )
    ce = F.cross_entropy(s, target[keep])
    return float(ALPHA * kl + (1 - ALPHA) * ce)


def _batch(data: Any, step: int, batch: int, seq_len: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, labels) of training batch ``step``: instruction pairs carry labels, token windows are their own."""
    if hasattr(data, "labels"):
        ids, labels = data.batch(step, batch, seed)
        return ids, labels
    ids = data.batch(step, batch, seq_len, seed)
    return ids, ids


def _reference_val(model: Any, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    total, count = 0.0, 0
    with torch.no_grad():
        for ids, labels in batches:
            logits = model(ids).logits[:, :-1].float()
            target = labels[:, 1:]
            total += float(F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=-100,
                                           reduction="sum"))  # fmt: skip
            count += int((target != -100).sum())
    return total / count


@checker(
    observes=[
        "runs", "steps_read", "tokens_differing", "step0_loss_rel_error", "val_read", "val_rel_error",
        "prompt_positions_ignored",
    ],
    ids=["FALSIFY-DISTILL-007"],
)  # fmt: skip
def distill_learns_from_the_batches(
    pretrained_init: Path, pretrain_data: Any, instruction_data: Any, tiny_model_factory: Any, tmp_path: Path,
    seed: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """Three steps of distillation from the session's init into a fresh tiny student, on the token
    corpus and on the instruction pairs, each run's log against the figures written out here."""

    steps, batch, seq_len, evals = 3, 4, 48, 2
    cfg = TrainConfig(steps=steps, batch_size=batch, seq_len=seq_len, lr=3e-3, warmup_steps=1, eval_every=steps,
                      save_every=steps, eval_batches=evals, seed=seed)  # fmt: skip
    teacher = load_checkpoint(pretrained_init)
    teacher.model.eval()
    out: dict[str, Any] = {"runs": 0, "steps_read": 0, "tokens_differing": 0, "step0_loss_rel_error": 0.0}
    out |= {"val_read": 0, "val_rel_error": 0.0, "prompt_positions_ignored": 0}
    for name, data in (("tokens", pretrain_data), ("pairs", instruction_data)):
        work = fresh_dir(tmp_path, f"distill-{name}-")
        student0 = tiny_model_factory(seed + 1)
        init = save_checkpoint(work / "student.safetensors", student0, teacher.tokenizer, make_manifest(step=0))
        result = distill(pretrained_init, work / "run", cfg, student_init=init, temperature=TEMPERATURE, alpha=ALPHA,
                         data=data, device="cpu")  # fmt: skip
        out["runs"] += 1
        pairs = hasattr(data, "labels")

        records = [json.loads(line) for line in (work / "run" / "log.jsonl").read_text().splitlines()]
        for r in (r for r in records if r.get("kind") == "train"):
            ids, labels = _batch(data, int(r["step"]), batch, seq_len, seed)
            out["steps_read"] += 1
            out["tokens_differing"] += r.get("tokens") != int((labels[:, 1:] != -100).sum())
            if pairs:
                out["prompt_positions_ignored"] += int((labels[:, 1:] == -100).sum() > 0)
            if r["step"] == 0:
                ref = _reference_loss(load_checkpoint(init).model, teacher.model, ids, labels)
                err = abs(float(r["loss"]) - ref) / abs(ref)
                out["step0_loss_rel_error"] = max(out["step0_loss_rel_error"], err)
        vals = [r for r in records if r.get("kind") == "val"]
        if vals:
            final = result.extra["model"]
            final.eval()
            batches = (
                data.val_batches(batch, evals) if pairs else [(b, b) for b in data.val_batches(batch, seq_len, evals)]
            )
            ref_val = _reference_val(final, batches)
            out["val_read"] += 1
            out["val_rel_error"] = max(out["val_rel_error"], abs(float(vals[-1]["val_loss"]) - ref_val) / ref_val)
    return out
