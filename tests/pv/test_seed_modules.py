"""Which libraries seeding reaches: a module already loaded is used as it is (even one put in
``sys.modules`` by hand, with no spec to find), one installed but not loaded is imported, and one
that is missing or fails to import is left out rather than failing the run."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from pv.run_checker import _importable, seed_everything


def test_a_loaded_module_without_a_spec_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds: list[int] = []
    numpy = types.ModuleType("numpy")  # a stand-in with no __spec__, as a test double has
    numpy.random = types.SimpleNamespace(seed=seeds.append)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "numpy", numpy)
    assert _importable("numpy") is numpy
    seed_everything(2**32 + 7)
    assert seeds == [7]


def test_an_installed_module_not_yet_loaded_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    module = _importable("colorsys")
    assert module is not None and module.__name__ == "colorsys" and sys.modules["colorsys"] is module


def test_a_missing_or_broken_module_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pv_broken_library.py").write_text("raise ImportError('a library that cannot load')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _importable("pv_no_such_library") is None
    assert _importable("pv_broken_library") is None
