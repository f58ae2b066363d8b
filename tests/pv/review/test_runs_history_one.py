"""A history limit of one gives each contract exactly its newest bundle from git history."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pv.review import runs as runs_module
from pv.review.runs import read_runs
from tests.pv.review.test_runs_limits import _bundle, _git, _run_id

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _committed_one_by_one(root: Path, bundles: list[tuple[str, int]]) -> Path:
    """Each bundle added in a commit of its own, then removed from the folder: only history has them."""
    evidence = root / "evidence"
    _git(root, "init", "-q")
    for cid, n in bundles:
        _bundle(evidence / cid, _run_id(n))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"{cid} {n}")
    for cid, n in bundles:
        shutil.rmtree(evidence / cid / _run_id(n))
    return evidence


def test_a_limit_of_one_reads_the_newest_bundle_of_each_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evidence = _committed_one_by_one(tmp_path, [("other-v1", 9), ("demo-v1", 1), ("demo-v1", 2)])
    monkeypatch.setattr(runs_module, "GIT_HISTORY_LIMIT", 1)
    runs = read_runs(evidence, tmp_path, ["demo-v1", "other-v1"])
    assert {cid: [run.run_id for run in found] for cid, found in runs.items()} == {
        "demo-v1": [_run_id(2)],
        "other-v1": [_run_id(9)],
    }
