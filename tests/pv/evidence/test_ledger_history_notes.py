"""History's words for a removed line no one can read, and its note on a shallow clone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pv.evidence import ledger as lg
from tests.pv.evidence.test_ledger_history_paths import Repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_a_removed_line_no_one_can_read_is_named_as_such(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.append("bundle", "r1")
    repo.path.write_text(repo.path.read_text() + "{not json}\n")
    repo.commit("evidence")
    repo.path.write_text(repo.lines()[0] + "\n")
    assert lg.history(repo.path).problems == [
        "evidence/c-v1/ledger.jsonl: the working tree removed the line of bundle (unreadable line); if that was an "
        "accident, `pv evidence forget RUN_ID --reason ...` records it"
    ]


def test_a_shallow_clone_says_what_it_could_not_read(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "origin")
    repo.append("bundle", "r1")
    repo.commit("one")
    repo.append("bundle", "r2")
    repo.commit("two")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.root}", str(clone)], check=True)
    found = lg.history(clone / "evidence" / "c-v1" / lg.LEDGER_FILE)
    assert found.notes == ["a shallow clone: only the fetched commits' diffs of the ledger were read (fetch-depth: 0)"]
    assert lg.history(repo.path).notes == []
