"""A run stops before the update when its gradient, not its loss, turns non-finite.

FALSIFY-PINIT-008 diverges a run until its loss is NaN.  A loss can stay finite while a
gradient overflows (an fp16 backward, a custom op's grad), and the loop checks the gradient norm
for exactly that.  Here a pretraining task's loss is untouched and a tensor hook makes the
embedding's gradient infinite at one step.  The stop, the log record, the exception and its
message, the weights (those of the last checkpoint: no update taken), the gradients (freed, not
zeroed in place) are read directly, and so are a resume from the kept checkpoint and the
refusals of a resume that cannot continue, word for word.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
from safetensors.torch import load_file

from engine.config import preset
from engine.data import TokenData
from engine.errors import NonFiniteLossError
from engine.model import DecoderLM, build_model
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig
from engine.train.loop import run_training
from engine.train.state import ResumeError
from engine.train.tasks import PretrainTask
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.training import _log
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BLOW_UP_AT = 2


class GradientBlowUp(PretrainTask):
    """Pretraining whose embedding gradient is +inf at step ``at`` and whose loss never changes."""

    def __init__(self, *args: Any, at: int | None) -> None:
        super().__init__(*args)
        self.at, self.step = at, -1
        cast(DecoderLM, self.model).model.embed_tokens.weight.register_hook(self._hook)

    def _hook(self, grad: torch.Tensor) -> torch.Tensor:
        return torch.full_like(grad, math.inf) if self.step == self.at else grad

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        self.step = step
        return super().loss(step)


@checker(
    observes=[
        "stop",
        "message_as_written",
        "last_record_as_written",
        "weights_differing_from_kept",
        "gradients_held",
        "folders",
        "unsaved_stop",
        "resumed",
        "finished_gradients_held",
        "refusals_differing",
    ],
    ids=["FALSIFY-PINIT-016"],
)
def gradient_blow_up_stops_cleanly(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path
) -> dict[str, Any]:
    """Tiny-preset pretraining for 4 steps saving every step, the embedding's gradient +inf at
    step 2; the same saving nothing; a resume of the first without the blow-up; a finished run;
    two resumes that cannot continue."""

    cfg = TrainConfig(steps=4, batch_size=2, seq_len=16, lr=1e-3, warmup_steps=0, save_every=1, seed=0)
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)

    def task(at: int | None) -> GradientBlowUp:
        torch.manual_seed(0)
        return GradientBlowUp(build_model(config), engine_tokenizer, pretrain_data, cfg, at=at)

    def stopped(run: GradientBlowUp, out: Path, c: TrainConfig) -> NonFiniteLossError | None:
        try:
            run_training(run, c, out)
        except NonFiniteLossError as exc:
            return exc
        return None

    out_dir = fresh_dir(tmp_path, "grad-stop-")
    run = task(BLOW_UP_AT)
    exc = stopped(run, out_dir, cfg)
    kept = out_dir / f"step-{BLOW_UP_AT:06d}"
    result: dict[str, Any] = {
        "stop": None if exc is None else [exc.step, exc.what, str(exc.value), exc.last_checkpoint == kept]
    }
    result["message_as_written"] = str(exc) == (
        f"step {BLOW_UP_AT}: the gradient norm is inf; training stopped before the update "
        f"(last good checkpoint kept at {kept})"
    )
    result["last_record_as_written"] = _log(out_dir / "log.jsonl")[-1] == {
        "kind": "nonfinite",
        "step": BLOW_UP_AT,
        "what": "grad_norm",
        "value": "inf",
        "last_checkpoint": str(kept),
    }
    saved = load_file(str(kept / "model.safetensors"))
    state = run.model.state_dict()
    result["weights_differing_from_kept"] = sorted(
        k for k, v in saved.items() if k not in state or not torch.equal(state[k].to(v.dtype), v)
    )
    result["gradients_held"] = sum(p.grad is not None for p in run.model.parameters())
    result["folders"] = sorted(p.name for p in out_dir.iterdir())

    unsaved_out = fresh_dir(tmp_path, "grad-stop-unsaved-")
    unsaved_cfg = TrainConfig(**{**cfg.to_dict(), "save_every": 0})
    unsaved = stopped(task(1), unsaved_out, unsaved_cfg)
    result["unsaved_stop"] = [
        unsaved is not None and unsaved.last_checkpoint is None,
        str(unsaved).endswith("(no checkpoint was written yet)"),
        _log(unsaved_out / "log.jsonl")[-1].get("last_checkpoint", "absent") is None,
    ]

    resumed_task = task(None)
    try:
        resumed = run_training(resumed_task, cfg, out_dir, resume=True)
        result["resumed"] = [
            resumed.start_step,
            math.isnan(resumed.step0_loss),
            len(resumed.losses),
            resumed.checkpoint == out_dir / "step-000004",
        ]
    except NonFiniteLossError as again:  # what a run that stepped on the infinite gradient meets
        result["resumed"] = ["stopped", again.step, again.what]
    result["finished_gradients_held"] = sum(p.grad is not None for p in resumed_task.model.parameters())

    refusals = {
        "empty": (
            fresh_dir(tmp_path, "grad-stop-empty-"),
            cfg,
            "--resume: {out} holds no complete checkpoint (latest.json missing)",
        ),
        "changed": (
            out_dir,
            TrainConfig(**{**cfg.to_dict(), "lr": 2e-3, "steps": 6}),
            "--resume with a different training config (lr, steps); same config needed",
        ),
    }
    result["refusals_differing"] = refusals_differing(
        (partial(run_training, task(None), c, out, resume=True), ResumeError, message.format(out=out))
        for out, c, message in refusals.values()
    )
    return result
