"""The ``grad_norm`` a training log reports, and the gradient the update then uses.

A user reads ``grad_norm`` to see a run blowing up; one logged after clipping never exceeds the clip
and hides it.  And ``grad_clip`` must clip: AdamW divides the step by the gradient's own scale, so
a clip that never happens barely shows in the weights after one step, but it shows in the
optimizer's first moment, which after one step is ``(1 - beta1)`` times the gradient it was given.
The reference is written out here: the first step's loss of the init on the first batch
(cross-entropy of the logits at t against the token at t + 1), its gradients by
``torch.autograd.grad``, their L2 norm over every trainable tensor in float64, and the gradient
clipped as ``torch.nn.utils.clip_grad_norm_`` documents (scaled by ``clip / (norm + 1e-6)`` when
that is below 1).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from engine.checkpoint import load_checkpoint
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig, clip_grad_norm, pretrain
from falsifiers.shared.training import own_streams, run_log
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

CLIPS = (1.0, 1e-3, 0.0)


@checker(
    observes=["reference_norm", "logged_differing", "moments_differing", "without_gradients"], ids=["FALSIFY-PINIT-024"]
)
def grad_norm_before_clipping(
    pretrained_init: Path, engine_tokenizer: EngineTokenizer, tmp_path: Path
) -> dict[str, Any]:
    """One pretraining step from the session's init on streams of the falsifier's own text, with
    grad_clip 1.0, 1e-3 and 0 (no clipping); the train record's grad_norm against the reference,
    and the first moment in the step's train_state.safetensors against the clipped gradient."""

    work = fresh_dir(tmp_path, "grad-norm-")
    data = own_streams(engine_tokenizer, work)
    base = TrainConfig(steps=1, batch_size=2, seq_len=16, eval_every=0, save_every=0, eval_batches=1, seed=0)

    model = load_checkpoint(pretrained_init).model.train()
    ids = data.batch(0, base.batch_size, base.seq_len, base.seed)
    logits = model(ids).logits[:, :-1]
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    grads = dict(zip([n for n, _ in named], torch.autograd.grad(loss, [p for _, p in named]), strict=True))
    reference = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads.values()))

    differing: list[list[Any]] = []
    moments: list[list[Any]] = []
    for i, clip in enumerate(CLIPS):
        cfg = replace(base, grad_clip=clip)
        run = fresh_dir(work, f"clip-{i}-")
        pretrain(run, cfg, init=pretrained_init, tokenizer=engine_tokenizer, data=data, device="cpu")
        logged = [r["grad_norm"] for r in run_log(run, "train")]
        if len(logged) != 1 or not abs(logged[0] - reference) <= 1e-4 * reference:
            differing.append([clip, logged])
        scale = min(1.0, clip / (reference + 1e-6)) if clip > 0 else 1.0
        state = load_file(str(run / "step-000001" / "train_state.safetensors"))
        names = json.loads((run / "step-000001" / "train_state.json").read_text(encoding="utf-8"))["param_names"]
        # the first moment after one step, unscaled: the gradient the update was given
        given = {n: state[f"optim.{j}.exp_avg"].double() / (1 - cfg.beta1) for j, n in enumerate(names)}
        if set(given) != set(grads):
            moments.append([clip, "parameters", sorted(set(given) ^ set(grads))])
            continue
        error = math.sqrt(sum(float((given[n] - grads[n].double() * scale).pow(2).sum()) for n in grads))
        if not error <= 1e-4 * reference * scale:
            moments.append([clip, error / (reference * scale)])
    # parameters no loss reached (one adapter of several, say): no gradient, a norm of 0.0
    untouched = [torch.nn.Parameter(torch.ones(3))]
    without = [clip_grad_norm(untouched, 0.0), clip_grad_norm(untouched, 1.0), clip_grad_norm([], 0.0)]
    return {
        "reference_norm": reference,
        "logged_differing": differing,
        "moments_differing": moments,
        "without_gradients": without,
    }
