"""FALSIFY-GEN-019 names each field of a direct model call that is not what the forward documents."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from engine.model import DecoderLM
from falsifiers.forward_outputs import forward_as_documented


def test_a_direct_call_gives_what_it_documents() -> None:
    out = forward_as_documented(make_tiny_model, 0)
    assert out.pop("cached_logits_gap") <= 1e-4
    assert out.pop("kept_logits_gap") <= 1e-4
    assert out.pop("loss_gap") <= 1e-6
    assert out == {
        "cache_when_not_asked": [True, True, True, True],
        "cache_lengths": [5, 6, 9],
        "cache_key_shapes": [[2, 2, 9, 16], [2, 2, 9, 16]],
        "accepted_shapes": [[2, 16, 512], [2, 1, 512]],
        "refusals_differing": [],
    }


def test_positions_off_by_one_through_the_cache_show_in_the_cached_calls() -> None:
    with FAULTS.enabled("kv_cache_off_by_one"):
        out = forward_as_documented(make_tiny_model, 0)
    assert out["cached_logits_gap"] > 1.0
    assert out["cache_lengths"] == [5, 6, 9]


def test_a_cache_built_on_every_call_and_an_unchecked_window_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = DecoderLM.forward

    def always_cached(self: DecoderLM, input_ids: Any, **kwargs: Any) -> Any:
        if kwargs.get("past_key_values") is None:
            kwargs["use_cache"] = True
        if input_ids.shape[1] > self.config.max_position_embeddings:  # the window "checked" elsewhere
            input_ids = input_ids[:, : self.config.max_position_embeddings]
        return forward(self, input_ids, **kwargs)

    monkeypatch.setattr(DecoderLM, "forward", always_cached)
    out = forward_as_documented(make_tiny_model, 0)
    assert out["cache_when_not_asked"] == [False, False, False, False]
    assert out["refusals_differing"] == [
        "not refused: 'sequence of 17 tokens exceeds the context window of 16 (max_position_embeddings)'"
    ]
