"""FALSIFY-CKPT-014 quotes torch's own refusal and names each state dict loaded in part."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import engine.checkpoint
import falsifiers.checkpoint_self_contained.state_fit as checker_module
from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from falsifiers.checkpoint_self_contained.state_fit import state_fit_or_refused


def test_the_engine_loads_a_fitting_state_whole_and_refuses_the_rest(tmp_path: Path) -> None:
    out = state_fit_or_refused(make_tiny_model, tmp_path)
    assert (out["refusals"], out["refusals_differing"], out["loads"], out["loads_differing"]) == (3, [], 3, [])


def test_a_loose_load_is_named_for_the_extra_and_the_missing_tensor(tmp_path: Path) -> None:
    with FAULTS.enabled("state_dict_loaded_loosely"):
        out = state_fit_or_refused(make_tiny_model, tmp_path)
    first, second = out["refusals_differing"]
    assert first.startswith("not refused: ") and '"extra.weight"' in first
    assert second.startswith("NotImplementedError: ") and '"model.norm.weight"' in second


def test_a_copied_head_and_a_training_model_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = engine.checkpoint.model_from_state

    def untied(*args: object, **kwargs: object) -> torch.nn.Module:
        model = build(*args, **kwargs)  # type: ignore[arg-type]
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
        return model.train()

    monkeypatch.setattr(engine.checkpoint, "model_from_state", untied)  # what the loaders call
    monkeypatch.setattr(checker_module, "model_from_state", untied)  # what the checker calls
    out = state_fit_or_refused(make_tiny_model, tmp_path)
    assert out["loads_differing"] == [
        "untied: in training mode",
        "tied: in training mode",
        "tied: the head is not the embedding",
        "tied bf16: in training mode",
        "tied bf16: the head is not the embedding",
    ]
