"""A history limit of one gives each contract exactly its newest bundle from git history."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pv.review import runs as runs_module
from pv.review.runs import read_runs
from tests.pv.review.test_runs_limits import _bundle, _git, _run_id

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_a_limit_of_one_reads_the_newest_bundle_of_each_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_module, "GIT_HISTORY_LIMIT", 1)
    root, evidence = tmp_path, tmp_path / "evidence"
    _git(root, "init", "-q")
    for cid, n in (("other-v1", 9), ("demo-v1", 1), ("demo-v1", 2)):
        _bundle(evidence / cid, _run_id(n))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"{cid} {n}")
    for bundle in [*(evidence / "demo-v1").iterdir(), *(evidence / "other-v1").iterdir()]:
        shutil.rmtree(bundle)  # only history has them now
    runs = read_runs(evidence, root, ["demo-v1", "other-v1"])
    assert {cid: [run.run_id for run in found] for cid, found in runs.items()} == {
        "demo-v1": [_run_id(2)],
        "other-v1": [_run_id(9)],
    }
