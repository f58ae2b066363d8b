"""FALSIFY-HFI-009 names RoPE rows that are not transformers' and tables rebuilt without need."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import engine.model
from engine.faults import FAULTS
from falsifiers.hf_import.rope_reference import tables_match_transformers

ROWS = [64, 200, 200, 400, 400, 400, 400, 400]
REUSED = [False, False, True, False, False, True, False, True]


def test_the_rows_are_transformers_and_the_table_is_reused() -> None:
    assert tables_match_transformers() == {"settings": 8, "differing": [], "rows": [ROWS], "reused": [REUSED]}
    assert torch.get_default_dtype() == torch.float32  # put back


def test_frequencies_in_the_default_dtype_differ_under_float64_only() -> None:
    with FAULTS.enabled("rope_freqs_in_default_dtype"):
        out = tables_match_transformers()
    assert out["differing"]
    assert all(line.startswith("default torch.float64, ") for line in out["differing"])
    assert (out["rows"], out["reused"]) == ([ROWS], [REUSED])


def test_a_table_rebuilt_on_every_call_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = engine.model.RotaryEmbedding.forward

    def rebuild(self: engine.model.RotaryEmbedding, length: int, dtype: torch.dtype, device: torch.device) -> Any:
        self.cos = torch.empty(0, self.head_dim)  # as if stale: built again at the size the call asks
        return forward(self, length, dtype, device)

    monkeypatch.setattr(engine.model.RotaryEmbedding, "forward", rebuild)
    out = tables_match_transformers()
    assert out["differing"] == []
    assert out["reused"] == [[False] * 8]
