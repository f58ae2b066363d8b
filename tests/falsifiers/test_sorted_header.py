"""FALSIFY-IO-021 tells a header left in the writer's order, and a False that was not said."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.safetensors_io
import falsifiers.engine_files.sorted_header as checker_module
from engine.faults import FAULTS
from falsifiers.engine_files.sorted_header import headers_sorted_in_place


def test_the_engine_sorts_in_place_and_leaves_a_spaced_header_alone(tmp_path: Path) -> None:
    assert headers_sorted_in_place(tmp_path) == {
        "files": 2,
        "unsorted": 0,
        "not_safetensors_own": 0,
        "sorted_reports": 4,
        "spaced_left_alone": 1,
    }


def test_a_header_in_hash_map_order_is_counted(tmp_path: Path) -> None:
    # safetensors' order is a fresh hash map's, so a save can come out sorted by chance (it did
    # once in CI): three tries, each in a folder of its own, make a miss vanishingly rare
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        with FAULTS.enabled("safetensors_header_unsorted"):
            out = headers_sorted_in_place(tmp_path / str(attempt))
        if out["unsorted"] >= 1:
            break
    assert out["unsorted"] >= 1 and out["sorted_reports"] < 4
    assert out["not_safetensors_own"] == 0 and out["spaced_left_alone"] == 1


def test_a_sort_that_claims_success_on_a_spaced_header_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sort = engine.safetensors_io.sort_header
    claims = lambda path: sort(path) or True  # noqa: E731
    monkeypatch.setattr(engine.safetensors_io, "sort_header", claims)
    monkeypatch.setattr(checker_module, "sort_header", claims)  # where the checker looks it up
    assert headers_sorted_in_place(tmp_path)["spaced_left_alone"] == 0
