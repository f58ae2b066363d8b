"""The optimizer a run trains with: AdamW with the betas, eps and weight decay its config asks for.

``TrainConfig`` carries ``beta1``, ``beta2``, ``eps`` and ``weight_decay`` for a user to set.  AdamW
left at torch's own defaults trains as well, and a short run barely shows the difference in its
loss, so the settings are read where the optimizer keeps them: each checkpoint's
``train_state.json`` holds torch's ``param_groups`` as the optimizer had them after the step, and a
resume hands them back to it.  Every value set here differs from torch's default (betas
(0.9, 0.999), eps 1e-8, weight decay 0.01) and from ``TrainConfig``'s.  The learning rate a group
holds after ``s`` updates is the configured rate times the schedule's factor for step ``s``
(one warm-up step, then cosine to ``min_lr_ratio`` over the second): 1.0 after the first update,
``min_lr_ratio`` after the second.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from engine.config import preset
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig, make_optimizer, pretrain
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.training import own_streams
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SETTINGS = {"lr": 3e-3, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.05, "min_lr_ratio": 0.25}
FACTOR_AFTER = {1: 1.0, 2: 0.25}  # the schedule's factor once the scheduler has stepped past update s
EMPTY = "nothing to train: the model has no parameter with requires_grad"


@checker(
    observes=["groups", "settings_differing", "max_rel_lr_error", "empty_refusal_differing"],
    ids=["FALSIFY-PINIT-025"],
)
def optimizer_as_configured(engine_tokenizer: EngineTokenizer, tmp_path: Path) -> dict[str, Any]:
    """Two pretraining steps of the tiny preset with every optimizer setting away from its default,
    a checkpoint after each; every param group of both train_state.json files against the config,
    and ``make_optimizer`` of no parameters."""

    work = fresh_dir(tmp_path, "optimizer-")
    data = own_streams(engine_tokenizer, work)
    cfg = TrainConfig(
        steps=2, batch_size=2, seq_len=16, warmup_steps=1, eval_every=0, save_every=1, eval_batches=1, seed=0,
        **SETTINGS,
    )  # fmt: skip
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)
    pretrain(work / "run", cfg, config=config, tokenizer=engine_tokenizer, data=data, device="cpu")
    want = {"betas": [cfg.beta1, cfg.beta2], "eps": cfg.eps, "weight_decay": cfg.weight_decay, "initial_lr": cfg.lr}
    groups, differing, errors = 0, list[str](), list[float]()
    for step, factor in FACTOR_AFTER.items():
        meta = json.loads((work / "run" / f"step-{step:06d}" / "train_state.json").read_text(encoding="utf-8"))
        for i, group in enumerate(meta["param_groups"]):
            groups += 1
            differing += [f"step {step} group {i}: {k} {group.get(k)!r}" for k, v in want.items() if group.get(k) != v]
            errors.append(abs(group["lr"] - cfg.lr * factor) / (cfg.lr * factor))
    return {
        "groups": groups,
        "settings_differing": differing,
        "max_rel_lr_error": max(errors, default=math.inf),
        "empty_refusal_differing": refusals_differing([(lambda: make_optimizer([], cfg), ValueError, EMPTY)]),
    }
