"""The ``grad_norm`` a training log reports: the gradients' total norm before clipping.

A user reads ``grad_norm`` to see a run blowing up; one logged after clipping never exceeds the clip
and hides it.  The reference is written out here: the first step's loss of the init on the first
batch (cross-entropy of the logits at t against the token at t + 1), its gradients by
``torch.autograd.grad`` and their L2 norm over every trainable tensor, in float64.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine.tokenizer import EngineTokenizer
from falsifiers._workdir import fresh_dir
from falsifiers.pretrain_api import TEXT
from pv.checkers import checker

CLIPS = (1.0, 1e-3, 0.0)


@checker(observes=["reference_norm", "logged_differing"], ids=["FALSIFY-PINIT-024"])
def grad_norm_before_clipping(
    pretrained_init: Path, engine_tokenizer: EngineTokenizer, tmp_path: Path
) -> dict[str, Any]:
    """One pretraining step from the session's init on streams of the falsifier's own text, with
    grad_clip 1.0, 1e-3 and 0 (no clipping); the train record's grad_norm against the reference."""
    from engine.checkpoint import load_checkpoint
    from engine.data import tokenize_corpus
    from engine.train import TrainConfig, pretrain

    work = fresh_dir(tmp_path, "grad-norm-")
    (work / "text.py").write_text(TEXT, encoding="utf-8")
    data = tokenize_corpus(engine_tokenizer, [work / "text.py"], val_fraction=0.25)
    base = TrainConfig(steps=1, batch_size=2, seq_len=16, eval_every=0, save_every=0, eval_batches=1, seed=0)

    model = load_checkpoint(pretrained_init).model.train()
    ids = data.batch(0, base.batch_size, base.seq_len, base.seed)
    logits = model(ids).logits[:, :-1]
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    params = [p for p in model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params)
    reference = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))

    differing: list[list[Any]] = []
    for i, clip in enumerate(CLIPS):
        cfg = replace(base, grad_clip=clip)
        run = fresh_dir(work, f"clip-{i}-")
        pretrain(run, cfg, init=pretrained_init, tokenizer=engine_tokenizer, data=data, device="cpu")
        logged = [
            r["grad_norm"]
            for r in map(json.loads, (run / "log.jsonl").read_text(encoding="utf-8").splitlines())
            if r["kind"] == "train"
        ]
        if len(logged) != 1 or not abs(logged[0] - reference) <= 1e-4 * reference:
            differing.append([clip, logged])
    return {"reference_norm": reference, "logged_differing": differing}
