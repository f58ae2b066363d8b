"""Distillation pairs the run cannot honour are refused before anything is written, and the loss's
edge cases: one labelled position, and none.

A student whose vocabulary is not the teacher's cannot learn the teacher's distribution: ``distill
--student-init`` with such a checkpoint must exit 2 naming both sizes before the run folder exists
(the loss itself would refuse only at the first step, after the folder and its log were written).
``check_pair`` refuses one module as both; ``distillation_loss`` refuses logits of two vocabularies
naming both.  The KL term averages over the labelled positions: with one, it is that position's
T² · KL (written out with torch's ``kl_div``); with none, it is 0, not 0/0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.config import preset
from engine.distill import DistillationRefused, check_pair, distillation_loss
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

OTHER_VOCAB = 640


@checker(
    observes=[
        "cli_refused_cleanly", "pair_refusals", "pair_refusals_named", "one_position_rel_error", "no_position_kl",
    ],
    ids=["FALSIFY-DISTILL-008"],
)  # fmt: skip
def unusable_pairs_refused(
    pretrained_init: Path, tiny_model_factory: Any, tmp_path: Path, temperature: float = 2.0, seed: int = 0
) -> dict[str, Any]:
    """The command with a student of another vocabulary; check_pair and distillation_loss called
    directly; the loss with one and with no labelled position."""

    work = fresh_dir(tmp_path, "distill-refusals-")
    teacher = load_checkpoint(pretrained_init)
    student = tiny_model_factory(seed + 1, config=preset("tiny", vocab_size=OTHER_VOCAB))
    other = save_checkpoint(work / "other-vocab.safetensors", student, teacher.tokenizer, make_manifest(step=0))
    out_dir = work / "run"
    result = cli_runner()("distill", pretrained_init, out_dir, "--student-init", other, "--steps", "1")
    vocab = teacher.config.vocab_size
    names = [f"teacher vocab_size {vocab} != student vocab_size {OTHER_VOCAB}"]
    out: dict[str, Any] = {"cli_refused_cleanly": refused_cleanly(result, names, [out_dir])}

    refusals = 0
    named = 0
    cases: list[tuple[Any, str]] = [
        (lambda: check_pair(teacher.model, teacher.model, allow_same=True), "same module object"),
        (
            lambda: distillation_loss(
                torch.zeros(1, 4, 64), torch.zeros(1, 4, 80), torch.zeros(1, 4, dtype=torch.long), temperature, 0.5
            ),
            "teacher vocabulary 80 != student vocabulary 64",
        ),
    ]
    for call, message in cases:
        try:
            call()
        except DistillationRefused as exc:
            refusals += 1
            named += message in str(exc)
    out["pair_refusals"], out["pair_refusals_named"] = refusals, named

    gen = torch.Generator().manual_seed(seed)
    s_logits, t_logits = torch.randn(1, 6, 64, generator=gen) * 2, torch.randn(1, 6, 64, generator=gen) * 2
    labels = torch.full((1, 6), -100, dtype=torch.long)
    labels[0, 3] = 7  # one labelled next token: predicted at position 2
    _, kl, _ = distillation_loss(s_logits, t_logits, labels, temperature, 0.5)
    ref = F.kl_div(
        F.log_softmax(s_logits[0, 2] / temperature, -1), F.log_softmax(t_logits[0, 2] / temperature, -1),
        log_target=True, reduction="sum",
    ) * temperature**2  # fmt: skip
    out["one_position_rel_error"] = float((kl - ref).abs() / ref.abs())
    _, kl_none, _ = distillation_loss(s_logits, t_logits, torch.full((1, 6), -100), temperature, 0.5)
    out["no_position_kl"] = float(kl_none)
    return out
