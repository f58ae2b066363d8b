"""A run stopped by a NaN loss says so as written, and a run counts the tokens it learned from.

FALSIFY-PINIT-008 diverges a run until its loss is NaN and reads where it stopped; here the stop
a user reads is held word for word: the exception's message (the step, "the loss", the value, and
"no checkpoint was written yet" when none was), the log's last record (``last_checkpoint`` null,
not a path, when none was kept).  And ``TrainResult.tokens`` (the tokens/s of every command's
summary) is the tokens every step of this run learned from: batch x window for pretraining, the
sum of the log's ``train`` records, and for a resumed run only the steps it ran itself.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import torch

from engine.config import preset
from engine.data import TokenData
from engine.errors import NonFiniteLossError
from engine.model import build_model
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig
from engine.train.loop import run_training
from engine.train.tasks import PretrainTask
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


class LossBlowUp(PretrainTask):
    """Pretraining whose loss is NaN at step ``at`` (None: never)."""

    def __init__(self, *args: Any, at: int | None) -> None:
        super().__init__(*args)
        self.at = at

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        loss, tokens = super().loss(step)
        return (loss * math.nan if step == self.at else loss), tokens


def _log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@checker(
    observes=["stop", "message_as_written", "record_as_written", "tokens", "tokens_logged", "resumed_tokens"],
    ids=["FALSIFY-PINIT-017"],
)
def loss_stop_and_token_count(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path
) -> dict[str, Any]:
    """Tiny-preset pretraining, 2 x 16 tokens a step: 4 steps saving nothing with a NaN loss at
    step 2; 4 steps to the end; 4 steps saving at step 2 with a NaN loss at step 3, then resumed."""

    batch, window, steps = 2, 16, 4
    cfg = TrainConfig(steps=steps, batch_size=batch, seq_len=window, lr=1e-3, warmup_steps=0, save_every=0, seed=0)
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)

    def task(at: int | None) -> LossBlowUp:
        torch.manual_seed(0)
        return LossBlowUp(build_model(config), engine_tokenizer, pretrain_data, cfg, at=at)

    result: dict[str, Any] = {}
    out = fresh_dir(tmp_path, "loss-stop-")
    try:
        run_training(task(2), cfg, out)
        result["stop"] = None
    except NonFiniteLossError as exc:
        result["stop"] = [exc.step, exc.what, str(exc.value), exc.last_checkpoint is None]
        result["message_as_written"] = str(exc) == (
            "step 2: the loss is nan; training stopped before the update (no checkpoint was written yet)"
        )
    result["record_as_written"] = _log(out / "log.jsonl")[-1] == {
        "kind": "nonfinite",
        "step": 2,
        "what": "loss",
        "value": "nan",
        "last_checkpoint": None,
    }

    finished_out = fresh_dir(tmp_path, "loss-stop-finished-")
    finished = run_training(task(None), cfg, finished_out)
    logged = [r["tokens"] for r in _log(finished_out / "log.jsonl") if r.get("kind") == "train"]
    result["tokens"] = [finished.tokens, steps * batch * window]
    result["tokens_logged"] = [sum(logged), len(logged)]

    resumed_out = fresh_dir(tmp_path, "loss-stop-resumed-")
    saving = TrainConfig(**{**cfg.to_dict(), "save_every": 2})
    with contextlib.suppress(NonFiniteLossError):  # the stop at step 3 leaves step 2 to resume from
        run_training(task(3), saving, resumed_out)
    resumed = run_training(task(None), saving, resumed_out, resume=True)
    result["resumed_tokens"] = [resumed.start_step, resumed.tokens, (steps - 2) * batch * window]
    return result
