"""What ``engine.train.pretrain`` trains on when it is given data, and what it refuses, word for word.

The CLI always passes a model config and lets the data default to the stdlib corpus; a program
that calls ``pretrain`` itself gives its own token streams, may give neither a config nor an init,
or a tokenizer larger than the model's vocabulary.  The streams here are tokenized from a text of
the falsifier's own, and the checkpoint's manifest must carry their digest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import load_checkpoint
from engine.config import ARCHITECTURE_KEYS, preset
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig, pretrain
from falsifiers.pretrain_init_finetune.init_architecture import header_config
from falsifiers.shared.training import own_streams, run_log
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(
    observes=["trained_on_given_data", "val_loss_diff", "manifest_differing", "refusals_differing"],
    ids=["FALSIFY-PINIT-019"],
)
def pretrain_api(pretrained_init: Path, engine_tokenizer: EngineTokenizer, tmp_path: Path) -> dict[str, Any]:
    """One step of the tiny preset on streams of its own (the tokenizer's 512 tokens fill the
    vocabulary exactly), one from the session's init, then pretrain with neither config nor init,
    with a 300-token vocabulary, and from the tiny init with the small preset's architecture."""

    work = fresh_dir(tmp_path, "pretrain-api-")
    data = own_streams(engine_tokenizer, work)
    cfg = TrainConfig(steps=1, batch_size=2, seq_len=16, eval_every=0, save_every=1, eval_batches=2, seed=0)
    result = pretrain(work / "run", cfg, config=preset("tiny"), tokenizer=engine_tokenizer, data=data, device="cpu")
    digest = None
    val_loss_diff = None
    # what each checkpoint's manifest says of its run: the kind, the init it started from (none,
    # or the path as given) and the training config as the run's own to_dict gives it
    from_init = pretrain(
        work / "from-init", cfg, init=pretrained_init, tokenizer=engine_tokenizer, data=data, device="cpu"
    )
    manifest_differing: list[list[Any]] = []
    for name, run, init_given in (("config", result, None), ("init", from_init, str(pretrained_init))):
        want = {"kind": "pretrain", "init": init_given, "train_config": json.loads(json.dumps(cfg.to_dict()))}
        manifest = load_checkpoint(run.checkpoint / "model.safetensors").manifest if run.checkpoint is not None else {}
        for key, value in want.items():
            if manifest.get(key, "missing") != value:
                manifest_differing.append([name, key, repr(manifest.get(key, "missing"))])
    if result.checkpoint is not None:
        loaded = load_checkpoint(result.checkpoint / "model.safetensors")
        digest = loaded.manifest.get("data_digest")
        # the validation loss at the end: the final model's mean loss over the first eval_batches
        # batches of consecutive validation windows (all full, so the mean of the batch means)
        model = loaded.model.eval()
        n = data.val.numel() // cfg.seq_len
        windows = data.val[: n * cfg.seq_len].reshape(n, cfg.seq_len)[: cfg.eval_batches * cfg.batch_size]
        with torch.no_grad():
            losses = [float(model(b, labels=b).loss) for b in windows.split(cfg.batch_size)]
        logged = run_log(work / "run", "val")
        val_loss_diff = abs(logged[-1]["val_loss"] - sum(losses) / len(losses)) if logged else None
    init, small = header_config(Path(pretrained_init)), preset("small").to_dict()
    differences = "; ".join(f"{k}: {init[k]!r} != {small[k]!r}" for k in ARCHITECTURE_KEYS if init[k] != small[k])
    requests: list[tuple[dict[str, Any], str]] = [
        ({}, "pretrain needs a model config or an --init checkpoint"),
        (
            {"config": preset("tiny", vocab_size=300), "tokenizer": engine_tokenizer},
            "tokenizer has 512 tokens, model vocab_size is 300",
        ),
        (
            {"config": preset("small"), "init": pretrained_init},
            f"--init {pretrained_init} does not match the requested architecture: {differences}",
        ),
    ]
    differing = []
    for i, (kwargs, message) in enumerate(requests):
        try:
            pretrain(fresh_dir(work, f"refused-{i}-") / "run", cfg, device="cpu", **kwargs)
            got = None
        except ValueError as exc:
            got = str(exc)
        if got != message:
            differing.append([message, got])
    return {
        "trained_on_given_data": digest == data.digest,
        "val_loss_diff": val_loss_diff,
        "manifest_differing": manifest_differing,
        "refusals_differing": differing,
    }
