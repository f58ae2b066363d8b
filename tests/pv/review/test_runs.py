"""Reading runs for review: the folder and its git history, and the base as the runs of the base's own code."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pv.review.runs import Tree, read_runs, runs_of_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
CONTRACT = b"metadata: {id: demo-v1}\n"


def _git(root: Path, *args: str) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@e"]
    return subprocess.run(["git", *env_args, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def _bundle(root: Path, run_id: str, code: bytes, finished: str) -> None:
    folder = root / "evidence" / "demo-v1" / run_id
    folder.mkdir(parents=True)
    data = {
        "run_id": run_id,
        "finished_at": finished,
        "environment": {"git_commit": _git(root, "rev-parse", "HEAD").strip(), "git_dirty": False},
        "contract": {"sha256": hashlib.sha256(CONTRACT).hexdigest()},
        "code": {"files": {"shop.py": hashlib.sha256(code).hexdigest()}},
        "falsifiers": [{"id": "FALSIFY-DEMO-001", "verdict": "survived", "observations": {"x": 1}}],
    }
    (folder / "bundle.json").write_text(json.dumps(data))
    (folder / "MANIFEST.sha256").write_text(f"{run_id}\n")


def test_the_base_is_the_runs_of_its_own_code_never_the_nearest_commit_with_evidence(tmp_path: Path) -> None:
    root = tmp_path
    _git(root, "init", "-q", "-b", "main")
    (root / "contracts").mkdir()
    (root / "contracts" / "demo-v1.yaml").write_bytes(CONTRACT)
    (root / "shop.py").write_bytes(b"v1")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    first = _git(root, "rev-parse", "HEAD").strip()
    _bundle(root, "20260101T000000000000Z-00000001", b"v1", "2026-01-01T00:00:00+00:00")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "evidence of v1")
    (root / "shop.py").write_bytes(b"v2")
    _git(root, "commit", "-q", "-am", "v2, not measured")
    # the bundle pruned from the folder: history still holds it
    shutil.rmtree(root / "evidence" / "demo-v1" / "20260101T000000000000Z-00000001")
    _git(root, "commit", "-q", "-am", "gc")

    runs = read_runs(root / "evidence", root, ["demo-v1"])["demo-v1"]
    assert [r.run_id for r in runs] == ["20260101T000000000000Z-00000001"]
    assert runs[0].where.startswith("git ")
    assert runs[0].digest == hashlib.sha256(runs[0].run_id.encode() + b"\n").hexdigest()

    matching, why = runs_of_commit(runs, Tree.at(root, "HEAD"), "contracts/demo-v1.yaml")
    assert matching == [] and "no run measured" in why and "1 code file(s) differ (shop.py)" in why
    matching, why = runs_of_commit(runs, Tree.at(root, first), "contracts/demo-v1.yaml")
    assert [r.run_id for r in matching] == ["20260101T000000000000Z-00000001"] and why == ""
