"""FALSIFY-CKPT-012 names each header id read otherwise than written, and each refusal gone."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.checkpoint
from contracts.conftest import make_tiny_model
from engine.config import ModelConfig
from engine.faults import FAULTS
from engine.tokenizer import cached_tokenizer
from falsifiers.checkpoint_self_contained.header_token_ids import header_token_ids_read_as_written


def test_the_engine_reads_every_header_id_as_written(tmp_path: Path) -> None:
    out = header_token_ids_read_as_written(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert (out["refusals"], out["refusals_differing"], out["loads"], out["loads_differing"]) == (4, [], 4, [])


def test_a_true_taken_for_an_id_is_named_as_not_refused(tmp_path: Path) -> None:
    with FAULTS.enabled("checkpoint_bool_token_id_accepted"):
        out = header_token_ids_read_as_written(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert out["refusals_differing"] == [
        "not refused: 'metadata key `eos_token_id` must be a token id below vocab_size"
        " or a list of them, got [5, true]'",
        "not refused: 'metadata key `bos_token_id` must be a token id below vocab_size, got true'",
    ]
    assert out["loads_differing"] == []


def test_a_list_of_one_read_as_its_id_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = engine.checkpoint.config_from_metadata

    def unwrapped(meta: dict[str, str]) -> ModelConfig:
        config = read(meta)
        eos = config.eos_token_id
        return config.replace(eos_token_id=eos[0]) if isinstance(eos, tuple) and len(eos) == 1 else config

    monkeypatch.setattr(engine.checkpoint, "config_from_metadata", unwrapped)
    out = header_token_ids_read_as_written(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert out["loads_differing"] == [
        "eos_token_id [5]: config holds 5 (ids (5,)), not (5,)",
        "eos_token_id [5]: model holds 5 (ids (5,)), not (5,)",
    ]
