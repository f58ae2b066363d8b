"""``engine.distill.distill`` does what its keyword arguments and defaults say.

The other distillation claims pass every setting explicitly.  Here a run left at the documented
defaults must record temperature 2.0 and alpha 0.5 in its checkpoint's manifest and return the
last step's KL and CE terms, which mix into the logged loss as alpha · KL + (1 − alpha) · CE; an
NF4 teacher is quantized with the NF4 settings given (bitsandbytes' own ``quant_state`` read for
double quantization, the kept modules read by type); ``allow_same`` lets an identical student run;
a run with no student is refused word for word.
"""

from __future__ import annotations

import json
import math
import warnings
from functools import partial
from pathlib import Path
from typing import Any

from torch import nn

from engine.checkpoint import inspect_checkpoint, load_checkpoint
from engine.data import TokenData
from engine.distill import distill, prepare_teacher, student_of_shape
from engine.quant import NF4AlignmentWarning, NF4Config, is_nf4_linear
from engine.train import TrainConfig
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _manifest(out: Path) -> dict[str, Any]:
    latest = json.loads((out / "latest.json").read_text(encoding="utf-8"))
    return dict(inspect_checkpoint(out / latest["folder"] / "model.safetensors")[2])


def _teacher_linears(teacher: nn.Module) -> list[str]:
    """Each linear's kind: NF4 with or without double quantization (bitsandbytes' nested state), or kept."""
    kinds = set()
    for name, module in teacher.named_modules():
        if is_nf4_linear(module):
            nested = bool(getattr(module.weight.quant_state, "nested", False))
            kinds.add(f"{name.rsplit('.', 1)[-1]}: nf4{' double' if nested else ''}")
        elif isinstance(module, nn.Linear):
            kinds.add(f"{name.rsplit('.', 1)[-1]}: kept")
    return sorted(kinds)


@checker(
    observes=[
        "manifest_settings",
        "terms_mix_to_loss",
        "terms",
        "teacher_linears",
        "same_ran",
        "refusals_differing",
        "resumed_done_terms",
        "default_teacher",
    ],
    ids=["FALSIFY-DISTILL-010"],
)
def distill_keywords(pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, steps: int) -> dict[str, Any]:
    """Three ``steps``-step runs from the session's init: a one-layer student at every default; the
    same with an NF4 teacher without double quantization and down_proj kept; the init distilled
    into itself with allow_same; and a run with no student."""
    teacher_config = inspect_checkpoint(pretrained_init)[0]
    student = student_of_shape(teacher_config.replace(num_hidden_layers=1), teacher_config)
    cfg = TrainConfig(steps=steps, batch_size=2, seq_len=16, lr=1e-3, warmup_steps=0, seed=0)
    run = partial(distill, pretrained_init, cfg=cfg, data=pretrain_data, device="cpu")
    records: list[dict[str, Any]] = []

    out = fresh_dir(tmp_path, "distill-defaults-")
    result = run(out_dir=out, student_config=student, on_record=records.append)
    manifest = _manifest(out)
    out_: dict[str, Any] = {
        "manifest_settings": [manifest.get("temperature"), manifest.get("alpha"), manifest.get("teacher_nf4")]
    }
    kl, ce = result.extra.get("kl"), result.extra.get("ce")
    last = [r for r in records if r.get("kind") == "train"][-1]
    out_["terms"] = [type(kl).__name__, type(ce).__name__]
    out_["terms_mix_to_loss"] = (
        isinstance(kl, float)
        and isinstance(ce, float)
        and math.isclose(0.5 * kl + 0.5 * ce, last["loss"], rel_tol=1e-5)
    )

    nf4 = NF4Config(double_quant=False, skip=("lm_head", "down_proj"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        quantized = run(
            out_dir=fresh_dir(tmp_path, "distill-nf4-"), student_config=student, quantize_teacher=True, nf4=nf4
        )
    out_["teacher_linears"] = _teacher_linears(quantized.extra["teacher"])

    # the finished run resumed: no step runs, so no term was measured
    done = run(out_dir=out, student_config=student, resume=True)
    out_["resumed_done_terms"] = [
        len(done.losses),
        *(isinstance(t, float) and math.isnan(t) for t in (done.extra.get("kl"), done.extra.get("ce"))),
    ]
    # prepare_teacher with its defaults: nothing quantized, every weight frozen, eval mode
    teacher = prepare_teacher(load_checkpoint(pretrained_init).model.train())
    out_["default_teacher"] = [
        _teacher_linears(teacher),
        sum(p.requires_grad for p in teacher.parameters()),
        teacher.training,
    ]
    same = run(out_dir=fresh_dir(tmp_path, "distill-same-"), student_init=pretrained_init, allow_same=True)
    out_["same_ran"] = len(same.losses)
    out_["refusals_differing"] = refusals_differing(
        [
            (
                partial(run, out_dir=fresh_dir(tmp_path, "distill-none-")),
                ValueError,
                "distill needs a student config or a student checkpoint",
            )
        ]
    )
    return out_
