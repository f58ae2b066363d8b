"""FALSIFY-GEN-019 names each field of a direct model call that is not what the forward documents."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from engine.model import DecoderLM
from falsifiers.generation.forward_outputs import forward_as_documented


def test_a_direct_call_gives_what_it_documents() -> None:
    out = forward_as_documented(make_tiny_model, 0)
    assert out.pop("cached_logits_gap") <= 1e-4
    assert out.pop("padded_chunk_gap") <= 1e-4
    assert out.pop("kept_logits_gap") <= 1e-4
    assert out.pop("loss_gap") <= 1e-6
    assert out == {
        "cache_when_not_asked": [True, True, True, True],
        "cache_lengths": [1, 5, 6, 9],
        "cache_key_shapes": [[2, 2, 9, 16], [2, 2, 9, 16]],
        "padded_chunk_failures": [],
        "padded_cache_mask": [[0, 0, 0, 1, 1, 1, 1, 1, 1], [1] * 9],
        "unpadded_cache_mask_held": False,
        "no_loss_without_labels": [True, True, True],
        "accepted_shapes": [[2, 16, 512], [2, 1, 512]],
        "refusals_differing": [],
    }


def test_positions_off_by_one_through_the_cache_show_in_the_cached_calls() -> None:
    with FAULTS.enabled("kv_cache_off_by_one"):
        out = forward_as_documented(make_tiny_model, 0)
    assert out["cached_logits_gap"] > 1.0
    assert out["cache_lengths"] == [1, 5, 6, 9]


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


def test_a_padded_cache_forgotten_by_a_chunk_of_several_tokens_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = DecoderLM.forward

    def chunk_forgets_padding(self: DecoderLM, input_ids: Any, **kwargs: Any) -> Any:
        cache = kwargs.get("past_key_values")
        if cache is not None and input_ids.shape[1] > 1:
            cache.attention_mask = None
        return forward(self, input_ids, **kwargs)

    monkeypatch.setattr(DecoderLM, "forward", chunk_forgets_padding)
    out = forward_as_documented(make_tiny_model, 0)
    assert out["padded_chunk_gap"] > 1.0
    assert out["cached_logits_gap"] <= 1e-4
    assert out["padded_chunk_failures"] == []


def test_a_padded_chunk_taking_the_one_row_decoding_mask_is_named_with_its_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forward = DecoderLM.forward

    def one_row_mask_for_every_chunk(self: DecoderLM, input_ids: Any, **kwargs: Any) -> Any:
        cache = kwargs.get("past_key_values")
        if cache is not None and cache.attention_mask is not None and input_ids.shape[1] > 1:
            raise RuntimeError("mask of 1 query row for 2 tokens")  # what the one-row mask meets
        return forward(self, input_ids, **kwargs)

    monkeypatch.setattr(DecoderLM, "forward", one_row_mask_for_every_chunk)
    out = forward_as_documented(make_tiny_model, 0)
    assert out["padded_chunk_gap"] == float("inf")
    assert out["padded_chunk_failures"] == ["tokens 5:7: RuntimeError: mask of 1 query row for 2 tokens"]


def test_a_mask_kept_for_an_unpadded_batch_and_a_loss_without_labels_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = DecoderLM.forward

    def keeps_every_mask(self: DecoderLM, input_ids: Any, **kwargs: Any) -> Any:
        out = forward(self, input_ids, **kwargs)
        mask = kwargs.get("attention_mask")
        if out.past_key_values is not None and mask is not None:
            out.past_key_values.attention_mask = mask
        if kwargs.get("labels") is None:
            out.loss = torch.zeros(())
        return out

    monkeypatch.setattr(DecoderLM, "forward", keeps_every_mask)
    out = forward_as_documented(make_tiny_model, 0)
    assert out["unpadded_cache_mask_held"] is True
    assert out["no_loss_without_labels"] == [False, False, False]
    assert out["padded_chunk_gap"] <= 1e-4
