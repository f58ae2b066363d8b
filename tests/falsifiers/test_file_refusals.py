"""FALSIFY-CKPT-013 writes each file byte by byte and names each refusal that is not word for word."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.checkpoint
from contracts.conftest import make_tiny_model
from engine.errors import CheckpointError
from engine.faults import FAULTS
from engine.tokenizer import cached_tokenizer
from falsifiers.checkpoint_self_contained.file_refusals import MAX_HEADER, file_refusals_named


def test_every_file_is_refused_word_for_word(tmp_path: Path) -> None:
    assert file_refusals_named(cached_tokenizer(512), make_tiny_model, tmp_path) == {
        "refusals": 23,
        "refusals_differing": [],
        "tensors_read": 21,
        "table_differing": [],
    }


def test_the_limit_is_the_engines() -> None:
    assert engine.checkpoint._MAX_HEADER == MAX_HEADER


def test_pickles_read_as_safetensors_are_each_named(tmp_path: Path) -> None:
    with FAULTS.enabled("checkpoint_pickle_unnamed"):
        out = file_refusals_named(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert len(out["refusals_differing"]) == 4
    assert all("a Python pickle" in d and "!=" in d for d in out["refusals_differing"])


def test_a_whole_header_called_truncated_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = engine.checkpoint.read_header

    def strict(path: str | Path) -> object:
        if Path(path).name == "header-only.safetensors":
            raise CheckpointError(f"{path}: truncated")
        return read(path)

    monkeypatch.setattr(engine.checkpoint, "read_header", strict)
    out = file_refusals_named(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert len(out["refusals_differing"]) == 1
    assert "header-only.safetensors: truncated" in out["refusals_differing"][0]
