"""The protected branch over a CI matrix, end to end on a local bare remote: each shard job runs its
part of the falsifiers (`ship-check.sh --shard K/N`), the job after them merges the parts into one
signed run and publishes it (`ship-check.sh --parts DIR --publish`), as .github/workflows/pv.yml does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.scripts.test_ci_flow import BRANCH, _ci, _clone, _run, signing_adopted

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_a_matrix_of_shards_merges_into_one_signed_published_run(tmp_path: Path) -> None:
    remote, _, key = signing_adopted(tmp_path)
    downloaded = tmp_path / "pv-parts"  # what actions/download-artifact gathers from the shard jobs
    for k in (1, 2):
        job = _clone(remote, tmp_path / f"shard-{k}")
        done = _ci(job, "--shard", f"{k}/2", key=key)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"ship-check: shard {k}/2 written to" in done.stdout
        parts = job / ".pv-evidence" / ".parts"
        shutil.copytree(parts, downloaded / f"pv-part-{k}")
        heads = _run(remote, "git", "branch", "--list", BRANCH).stdout
        assert heads.strip() == ""  # a shard never publishes
    merge = _clone(remote, tmp_path / "merge")
    done = _ci(merge, "--parts", str(downloaded), "--publish", key=key)
    # the merged run is one signed, complete run: it backs ACTIVE while the contract says DRAFT
    assert done.returncode == 1 and "FAILED steps: promote-check" in done.stdout, done.stdout + done.stderr
    assert "shard 1 of 2" in done.stdout and "shard 2 of 2" in done.stdout and "signed by" in done.stdout
    assert "would change DRAFT -> ACTIVE" in done.stdout
    ledger = _run(remote, "git", "show", f"{BRANCH}:mean-v1/ledger.jsonl").stdout.splitlines()
    assert len(ledger) == 1 and json.loads(ledger[0])["kind"] == "bundle"


def test_a_shard_job_neither_merges_nor_publishes(tmp_path: Path) -> None:
    remote, _, key = signing_adopted(tmp_path)
    job = _clone(remote, tmp_path / "shard")
    for extra in (("--publish",), ("--parts", "somewhere")):
        done = _ci(job, "--shard", "1/2", *extra, key=key)
        assert done.returncode == 2 and "a shard only writes its part" in done.stderr
