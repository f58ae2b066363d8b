"""The LoRA settings a fine-tune accepts, what it refuses, and what PEFT is given.

``LoraSettings`` is what ``finetune --rank/--alpha/--dropout/--targets`` builds: a rank of at least
1, a dropout in [0, 1), and at least one target, each one of the engine's seven projections.  A
setting outside those is refused with a ``ValueError`` naming it, and ``finetune`` exits 2 printing
``error: `` and the same words before it reads the base.  Settings at the edges (rank 1, dropout 0
and just below 1, every projection) are kept as given, and ``peft_config`` hands PEFT exactly them:
``LoraConfig``'s r, lora_alpha, lora_dropout and target_modules, no bias, B initialised to zeros
(``init_lora_weights=True``) and no task type.  Every message is written out below; the projections'
names are the engine's documented seven, written out too.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from engine.lora import LoraSettings
from falsifiers.shared.refusals import Refusal, command_refusals_differing, refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
UNKNOWN = f"unknown LoRA target(s) ['bar', 'foo_proj']; the engine's projections are {PROJECTIONS}"
NO_TARGET = "LoRA needs at least one target projection"
# LoraSettings keywords, the finetune options that give them, and the refusal each must get
REFUSED: list[tuple[dict[str, Any], tuple[Any, ...], str]] = [
    ({"r": 0}, ("--rank", 0), "LoRA rank must be >= 1, got 0"),
    ({"r": -3}, ("--rank", -3), "LoRA rank must be >= 1, got -3"),
    ({"dropout": 1.0}, ("--dropout", 1.0), "LoRA dropout must be in [0, 1), got 1.0"),
    ({"dropout": 1.5}, ("--dropout", 1.5), "LoRA dropout must be in [0, 1), got 1.5"),
    ({"dropout": -0.25}, ("--dropout", -0.25), "LoRA dropout must be in [0, 1), got -0.25"),
    ({"targets": ()}, ("--targets", ","), NO_TARGET),
    ({"targets": ("q_proj", "foo_proj", "bar")}, ("--targets", "q_proj,foo_proj,bar"), UNKNOWN),
]
# settings at the edges, each kept as given
ACCEPTED: list[dict[str, Any]] = [
    {"r": 1, "alpha": 1.0, "dropout": 0.0, "targets": ("o_proj",)},
    {"r": 2, "alpha": 0.5, "dropout": 0.999, "targets": tuple(PROJECTIONS)},
    {"r": 16, "alpha": 32.0, "dropout": 0.1, "targets": ("v_proj", "q_proj")},
]


def _given(settings: Any) -> dict[str, Any]:
    return {"r": settings.r, "alpha": settings.alpha, "dropout": settings.dropout, "targets": settings.targets}


def _peft(config: Any) -> dict[str, Any]:
    return {
        "r": config.r,
        "alpha": config.lora_alpha,
        "dropout": config.lora_dropout,
        "targets": set(config.target_modules),
        "bias": config.bias,
        "init_lora_weights": config.init_lora_weights,
        "task_type": config.task_type,
    }


@checker(
    observes=["refusals", "refusals_differing", "commands", "commands_differing", "kept", "kept_differing"],
    ids=["FALSIFY-LORA-017"],
)
def lora_settings_kept_or_refused(tmp_path: Path) -> dict[str, Any]:
    """LoraSettings with each keyword of ``REFUSED``, and ``finetune BASE OUT`` with its options (the
    base a file never read: the settings are refused first), as they differ from the refusal
    written; LoraSettings of each of ``ACCEPTED`` and its peft_config, as they differ from what was
    given (targets as a set for PEFT, which keeps them as one)."""

    work = fresh_dir(tmp_path, "lora-settings-")
    base = work / "base.safetensors"
    base.write_bytes(b"never read")
    cases: list[Refusal] = [
        (functools.partial(LoraSettings, **kwargs), ValueError, message) for kwargs, _, message in REFUSED
    ]
    commands = [(("finetune", base, work / "out", *options), message) for _, options, message in REFUSED]
    kept_differing: list[str] = []
    for kwargs in ACCEPTED:
        try:
            settings = LoraSettings(**kwargs)
        except ValueError as exc:
            kept_differing.append(f"{kwargs}: refused: {exc}")
            continue
        if _given(settings) != kwargs:
            kept_differing.append(f"{kwargs}: held as {_given(settings)}")
        want = {**kwargs, "targets": set(kwargs["targets"]), "bias": "none", "init_lora_weights": True}
        got = _peft(settings.peft_config())
        want["task_type"] = None
        for key, value in want.items():
            if got[key] != value:
                kept_differing.append(f"{kwargs}: peft_config {key} {got[key]!r} != {value!r}")
    return {
        "refusals": len(cases),
        "refusals_differing": refusals_differing(cases),
        "commands": len(commands),
        "commands_differing": command_refusals_differing(commands, work),
        "kept": len(ACCEPTED),
        "kept_differing": kept_differing,
    }
