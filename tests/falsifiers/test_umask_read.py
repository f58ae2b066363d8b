"""FALSIFY-IO-022 names each umask set while it could be read, each umask left changed, each mode wrong."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import engine.atomic
from engine.faults import FAULTS
from falsifiers.engine_files.umask_read import umask_read_not_set


def test_the_engine_reads_the_umask_without_setting_it(tmp_path: Path) -> None:
    out = umask_read_not_set(tmp_path)
    assert out == {"calls_with_status": [], "read_differing": [], "modes_differing": [], "umask_after_differing": []}


def test_the_set_and_restore_idiom_where_proc_says_it_is_named(tmp_path: Path) -> None:
    with FAULTS.enabled("umask_read_by_setting"):
        out = umask_read_not_set(tmp_path)
    calls = ", ".join(["022, 027"] * 5)
    assert out["calls_with_status"] == [
        f"umask 027, /proc/self/status readable: os.umask called with {calls}",
        f"umask 002, /proc/self/status readable: os.umask called with {calls.replace('027', '002')}",
    ]
    assert (out["read_differing"], out["modes_differing"], out["umask_after_differing"]) == ([], [], [])


def test_a_fallback_that_leaves_its_own_umask_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = engine.atomic.current_umask

    def no_restore() -> int:
        try:
            Path("/proc/self/status").read_text()
        except OSError:
            return os.umask(0o022)  # the old mask returned, and 022 left in its place
        return read()

    monkeypatch.setattr(engine.atomic, "current_umask", no_restore)
    out = umask_read_not_set(tmp_path)
    assert out["calls_with_status"] == []
    assert out["umask_after_differing"] == [
        "umask 027, /proc/self/status unreadable: the umask is 022 after the writes",
        "umask 002, /proc/self/status unreadable: the umask is 022 after the writes",
    ]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc/self/status")
def test_the_claim_is_skipped_without_a_umask_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import falsifiers.engine_files.umask_read as umask_read

    monkeypatch.setattr(umask_read, "_status_lines", lambda: ["Name:\tpython"])
    with pytest.raises(pytest.skip.Exception, match="has no Umask: line"):
        umask_read_not_set(tmp_path)
