"""A clone deepened after its history was read is read whole at its next commit, in the same
process: whether a clone is shallow is kept per commit, not per repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pv.evidence import ledger as lg
from tests.pv.evidence.test_ledger_history_paths import Repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SHALLOW = "a shallow clone: only the fetched commits' diffs of the ledger were read (fetch-depth: 0)"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True)


def test_a_clone_deepened_and_committed_to_is_no_longer_called_shallow(tmp_path: Path) -> None:
    origin = Repo(tmp_path / "origin")
    for run_id in ("r1", "r2"):
        origin.append("bundle", run_id)
        origin.commit(run_id)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin.root}", str(clone)], check=True)
    ledger = clone / origin.path.relative_to(origin.root)
    assert lg.history(ledger).notes == [SHALLOW]

    _git(clone, "fetch", "-q", "--unshallow")
    with lg.locked(ledger.parent) as led:
        lg.append(led, "bundle", "r3", "d-r3")
    _git(clone, "commit", "-q", "-am", "r3")
    assert lg.history(ledger).notes == []
