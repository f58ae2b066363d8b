"""Reviewed equivalent mutants are held to the change they were reviewed as."""

from __future__ import annotations

from pathlib import Path

from tests.scripts_loader import load_script

equivalents = load_script("scripts/mutation/equivalents.py")

REVIEWED = {
    "sut.m.x_f__mutmut_3": "float('NAN') is float('nan')",
    "sut.m.x_f__mutmut_7": "cpu-only: .to(None) keeps a CPU tensor",
    "sut.m.x_g__mutmut_2": "zip's strictness never decides",
    "sut.m.x_h__mutmut_1": "a new review",
}


def test_an_entry_holds_while_its_mutant_changes_what_was_reviewed(tmp_path: Path) -> None:
    lock_path = tmp_path / "diffs.json"
    reviewed_changes = {
        "sut.m.x_f__mutmut_3": ['-    x = float("nan")', '+    x = float("NAN")'],
        "sut.m.x_f__mutmut_7": ["-    return t.to(device)", "+    return t.to(None)"],
        "sut.m.x_g__mutmut_2": ["-    zip(a, b, strict=True)", "+    zip(a, b, strict=None)"],
    }
    equivalents.write_lock(lock_path, reviewed_changes)
    lock = equivalents.read_lock(lock_path)
    assert lock == reviewed_changes
    now = {
        "sut.m.x_f__mutmut_3": ['-    x = float("nan")', '+    x = float("NAN")'],  # as reviewed
        "sut.m.x_f__mutmut_7": ["-    if t is None:", "+    if t is not None:"],  # renumbered by an edit
        "sut.m.x_g__mutmut_2": None,  # the function lost mutants
        "sut.m.x_h__mutmut_1": ["-    a", "+    b"],
    }
    bad = equivalents.stale(REVIEWED, lock, now)
    assert sorted(bad) == ["sut.m.x_f__mutmut_7", "sut.m.x_g__mutmut_2", "sut.m.x_h__mutmut_1"]
    assert "if t is not None:" in bad["sut.m.x_f__mutmut_7"]
    assert "no such mutant" in bad["sut.m.x_g__mutmut_2"]
    assert "never locked" in bad["sut.m.x_h__mutmut_1"]
    assert equivalents.read_lock(tmp_path / "absent.json") == {}
