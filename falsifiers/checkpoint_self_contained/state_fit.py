"""``model_from_state``: a model built around a state dict, or a refusal quoting torch's own.

``engine.checkpoint.model_from_state`` is the public step every loader ends with (checkpoint, HF
and GGUF import): it builds the architecture a config describes and puts the given tensors in
place.  A state dict that does not fit (a tensor too many, one missing, one of another shape) is
refused with a ``CheckpointError`` "state dict does not fit the architecture: " followed by the
refusal torch's own ``load_state_dict(strict=True)`` gives that state for that architecture (read
here from a model of the same config built by the tiny-model factory), never loaded in part.  A
state that fits gives a model in eval mode whose every tensor equals the one given, whose tied
head is its embedding (one parameter), in the dtype asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import model_from_state
from engine.errors import CheckpointError
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

NORM, HEAD, EMBEDDING = "model.norm.weight", "lm_head.weight", "model.embed_tokens.weight"
PREFIX = "state dict does not fit the architecture: "


def _torch_refusal(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> str:
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        return str(exc)
    return "(accepted)"


@checker(observes=["refusals", "refusals_differing", "loads", "loads_differing"], ids=["FALSIFY-CKPT-014"])
def state_fit_or_refused(tiny_model_factory: Callable[..., Any], tmp_path: Path) -> dict[str, Any]:
    """model_from_state of the tiny preset's state dict with a tensor added, one removed and the
    final norm at half its width (refusals that differ from PREFIX + torch's own, each read from a
    fresh model of the config); then of the untied state, the tied state without its head, and the
    tied one in bfloat16: what differs from eval mode, equal tensors, a head that is the embedding
    and the dtype asked for."""

    model = tiny_model_factory(0)
    config = model.config
    state = {k: v.clone() for k, v in model.state_dict().items()}
    width = state[NORM].shape[0]
    unfit = {
        "extra": state | {"extra.weight": torch.zeros(2)},
        "missing": {k: v for k, v in state.items() if k != NORM},
        "halved": state | {NORM: torch.ones(width // 2)},
    }
    reference = tiny_model_factory(1)
    cases = [
        (functools.partial(model_from_state, config, s), CheckpointError, PREFIX + _torch_refusal(reference, s))
        for s in unfit.values()
    ]
    differing: list[str] = []
    tied = tiny_model_factory(0, tie_word_embeddings=True)
    tied_state = {k: v.clone() for k, v in tied.state_dict().items() if k != HEAD}  # a tied file holds it once
    for label, cfg, given, dtype in (
        ("untied", config, state, None),
        ("tied", tied.config, tied_state, None),
        ("tied bf16", tied.config, tied_state, torch.bfloat16),
    ):
        built = model_from_state(cfg, given, dtype=dtype)
        got = built.state_dict()
        if built.training:
            differing.append(f"{label}: in training mode")
        want = {k: v.to(dtype) if dtype is not None else v for k, v in given.items()}
        if cfg.tie_word_embeddings:
            want[HEAD] = want[EMBEDDING]
            if built.lm_head.weight is not built.model.embed_tokens.weight:
                differing.append(f"{label}: the head is not the embedding")
        differing += [
            f"{label}: {k} differs"
            for k in sorted(want.keys() | got.keys())
            if k not in want or k not in got or got[k].dtype != want[k].dtype or not torch.equal(got[k], want[k])
        ]
    return {
        "refusals": len(cases),
        "refusals_differing": refusals_differing(cases),
        "loads": 3,
        "loads_differing": differing,
    }
