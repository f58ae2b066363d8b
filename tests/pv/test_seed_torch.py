"""Seeding reaches torch's global generator whenever torch can be had, as it reaches numpy's."""

from __future__ import annotations

import sys
import types

import pytest

from pv.run_checker import seed_everything


def test_seeding_seeds_torch_when_it_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds: list[int] = []
    torch = types.ModuleType("torch")  # a stand-in: what seeding calls, recorded
    torch.manual_seed = seeds.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    seed_everything(2**40 + 3)
    assert seeds == [2**40 + 3]  # torch takes a 64-bit seed whole, unlike numpy's 32 bits
