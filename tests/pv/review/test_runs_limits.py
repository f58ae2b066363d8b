"""Which runs the review reads: at most GIT_HISTORY_LIMIT bundles per contract from the evidence
folder's git history (newest first, each once however often it was added), and every bundle of the
folder whatever odd entries sit beside it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pv.review import runs as runs_module
from pv.review.runs import read_runs

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True)


def _bundle(folder: Path, run_id: str) -> None:
    folder.joinpath(run_id).mkdir(parents=True)
    folder.joinpath(run_id, "bundle.json").write_text(json.dumps({"run_id": run_id, "finished_at": run_id[:8]}))
    folder.joinpath(run_id, "MANIFEST.sha256").write_text(f"manifest of {run_id}\n")


def _run_id(n: int) -> str:
    return f"2026010{n}T000000000001Z-0000000{n}"


def test_history_gives_each_contract_its_newest_bundles_up_to_the_limit_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_module, "GIT_HISTORY_LIMIT", 2)
    root, evidence = tmp_path, tmp_path / "evidence"
    _git(root, "init", "-q")
    _bundle(evidence / "other-v1", _run_id(9))  # the oldest commit: read after demo-v1's limit is reached
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "other")
    for n in (1, 2, 3, 4):  # one commit each, newest last
        _bundle(evidence / "demo-v1", _run_id(n))
        (evidence / "demo-v1" / "not-a-run-id").mkdir(exist_ok=True)
        (evidence / "demo-v1" / "not-a-run-id" / "bundle.json").write_text(json.dumps({"run_id": f"x{n}"}))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"run {n}")
        shutil.rmtree(evidence / "demo-v1" / "not-a-run-id")
    # the newest bundle removed and added again: two additions in history, one run
    shutil.rmtree(evidence / "demo-v1" / _run_id(4))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "pruned")
    _bundle(evidence / "demo-v1", _run_id(4))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "restored")
    for folder in (*(evidence / "demo-v1").iterdir(), evidence / "other-v1" / _run_id(9)):
        shutil.rmtree(folder)  # only history has them now
    runs = read_runs(evidence, root, ["demo-v1", "other-v1"])
    assert {cid: [run.run_id for run in found] for cid, found in runs.items()} == {
        "demo-v1": [_run_id(3), _run_id(4)],  # oldest first
        "other-v1": [_run_id(9)],
    }


def test_the_folder_s_odd_entries_are_passed_over_and_every_bundle_after_them_read(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    folder = evidence / "demo-v1"
    _bundle(folder, "00000000-not-a-run-id")  # a bundle's files under a name that is no run id
    _bundle(folder, _run_id(1))
    (folder / _run_id(1) / "bundle.json").write_text("{not json")
    _bundle(folder, _run_id(2))
    _bundle(folder, _run_id(3))
    (folder / _run_id(3) / "MANIFEST.sha256").unlink()  # no manifest: nothing to bind it to, no run
    _bundle(folder, _run_id(4))
    runs = read_runs(evidence, tmp_path, ["demo-v1", "absent-v1"])
    assert [(run.contract_id, run.run_id, run.where) for run in runs["demo-v1"]] == [
        ("demo-v1", _run_id(2), f"evidence/demo-v1/{_run_id(2)}"),
        ("demo-v1", _run_id(4), f"evidence/demo-v1/{_run_id(4)}"),
    ]
    assert runs["absent-v1"] == []  # no evidence folder: no runs
