"""A journal closed twice (the session's end and an interrupt both closing it) is closed once."""

from __future__ import annotations

from pathlib import Path

from pv.evidence.journal import Journal
from pv.results import RunRecord


def test_closing_a_journal_again_is_a_no_op(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "run-1")
    journal.session(RunRecord("run-1", "2026-01-01T00:00:00Z", "", mutants_enabled=False))
    assert journal.path.is_file()
    journal.close()
    journal.close()
    assert not journal.path.exists() and not journal.dir.exists()
