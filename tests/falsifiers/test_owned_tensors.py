"""FALSIFY-CKPT-015 reads the process's mappings: views into the file are named, a system without
/proc is a skip with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

import falsifiers.checkpoint_self_contained.owned_tensors
from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from engine.tokenizer import cached_tokenizer
from falsifiers.checkpoint_self_contained.owned_tensors import tensors_own_their_memory

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux's /proc/self/maps")


def test_the_engine_leaves_no_tensor_in_the_files_mapping(tmp_path: Path) -> None:
    out = tensors_own_their_memory(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert out == {
        "loads": 4,
        "tensors_in_mapping": [],
        "file_still_mapped": 0,
        "values_differing": [],
        "reference_mapped": 1,
    }


def test_tensors_kept_as_views_of_the_mapping_are_each_named(tmp_path: Path) -> None:
    with FAULTS.enabled("checkpoint_mmap_kept"):
        out = tensors_own_their_memory(cached_tokenizer(512), make_tiny_model, tmp_path)
    assert "load_state: model.norm.weight" in out["tensors_in_mapping"]
    assert "load_checkpoint: model.norm.weight" in out["tensors_in_mapping"]
    assert "load_state (safetensors < 0.8): model.norm.weight" in out["tensors_in_mapping"]
    assert out["file_still_mapped"] == 4 and out["values_differing"] == []


def test_a_system_without_proc_maps_is_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(falsifiers.checkpoint_self_contained.owned_tensors, "MAPS", tmp_path / "no-maps")
    with pytest.raises(pytest.skip.Exception, match="/proc/self/maps"):
        tensors_own_their_memory(cached_tokenizer(512), make_tiny_model, tmp_path)
