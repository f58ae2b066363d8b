"""What the validation loss a run reports is: the mean next-token loss per learned token.

``engine.train.mean_loss`` scores a list of ``(ids, labels)`` batches; a fine-tune's validation rows
learn different numbers of response tokens, so a mean of the batches' means (or a count that
starts one position late) weighs some tokens more than others.  The formula is written out here:
the model's logits at position t against the label at t + 1, summed over every label that is not
-100 and divided by their number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.data import InstructionData
from engine.train import TrainConfig, mean_loss
from engine.train.tasks import finetune
from falsifiers.shared.training import instruction_subset, run_log
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

IGNORE = -100
NO_BATCHES = "no validation batches: the validation split is shorter than one window"


def _token_mean(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[float, float]:
    """(loss per learned token, mean of the batches' own means) of ``model`` on ``batches``, read on
    the model's own device (a fine-tune on a GPU machine trains on the GPU)."""
    device = next(model.parameters()).device
    total, count, means = 0.0, 0, []
    with torch.no_grad():
        for ids, labels in batches:
            logits = model(ids.to(device)).logits[:, :-1].double()
            target = labels[:, 1:].to(device)
            summed = float(F.cross_entropy(logits.transpose(1, 2), target, ignore_index=IGNORE, reduction="sum"))
            n = int((target != IGNORE).sum())
            total, count = total + summed, count + n
            means.append(summed / n)
    return total / count, sum(means) / len(means)


def _hand_batches(vocab: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Two batches learning 10 and 2 tokens: the first row of the first learns every position
    (position 1 included), the others only their last few."""
    gen = torch.Generator().manual_seed(23)
    ids = torch.randint(4, vocab, (3, 8), generator=gen)
    labels = ids.clone()
    labels[1, :5] = IGNORE  # learns positions 5..7
    labels[2, :5] = IGNORE
    labels[2, 7] = IGNORE  # learns positions 5..6, then padding
    return [(ids[:2], labels[:2]), (ids[2:], labels[2:])]


@checker(
    observes=["hand_batches", "finetune_val", "refusal"],
    ids=["FALSIFY-PINIT-023"],
)
def validation_loss_per_learned_token(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path
) -> dict[str, Any]:
    """mean_loss on two batches of hand-made labels; the validation loss a 1-step LoRA fine-tune
    logs, against the formula over its first two validation batches of 2 rows; mean_loss with no
    batches."""

    model = load_checkpoint(pretrained_init).model.eval()
    batches = _hand_batches(model.config.vocab_size)
    want, batch_means = _token_mean(model, batches)
    got = mean_loss(model, batches, torch.device("cpu"))
    hand = [abs(got - want) <= 1e-5 * abs(want), abs(batch_means - want) > 1e-3]

    cfg = TrainConfig(steps=1, batch_size=2, seq_len=64, lr=1e-3, eval_every=0, save_every=0, eval_batches=2, seed=0)
    data = instruction_subset(instruction_data, 4)
    work = fresh_dir(tmp_path, "val-loss-")
    run = finetune(pretrained_init, work, cfg, method="lora", data=data)
    logged = [r["val_loss"] for r in run_log(work, "val")]
    rows = data.val_input_ids.size(0)
    val = [(data.val_input_ids[i : i + 2], data.val_labels[i : i + 2]) for i in range(0, min(rows, 4), cfg.batch_size)]
    counts = [int((labels[:, 1:] != IGNORE).sum()) for _, labels in val]
    trained_want, trained_batch_means = _token_mean(run.extra["model"].eval(), val)
    finetune_val = [
        len(logged) == 1 and abs(logged[0] - trained_want) <= 1e-5 * abs(trained_want),
        len(counts) == 2 and counts[0] != counts[1] and abs(trained_batch_means - trained_want) > 1e-4,
    ]

    try:
        mean_loss(model, [], torch.device("cpu"))
        refusal = "no refusal"
    except ValueError as exc:
        refusal = str(exc)
    return {"hand_batches": hand, "finetune_val": finetune_val, "refusal": refusal}
