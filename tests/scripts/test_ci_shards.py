"""The protected branch over a CI matrix, end to end on a local bare remote: each shard job runs its
part of the falsifiers (`ship-check.sh --shard K/N`), the job after them merges the parts into one
signed run and publishes it (`ship-check.sh --parts DIR --publish`), as .github/workflows/pv.yml does."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.scripts.test_adoption import readme_steps
from tests.scripts.test_ci_flow import BRANCH, ROOT, _ci, _clone, _env, _run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _project(tmp_path: Path) -> tuple[Path, str]:
    remote = tmp_path / "remote.git"
    _run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    dev = tmp_path / "dev"
    files, _ = readme_steps()
    for rel, content in files.items():
        (dev / rel).parent.mkdir(parents=True, exist_ok=True)
        (dev / rel).write_text(content)
    for package in ("mysystem", "mychecks"):
        (dev / package / "__init__.py").touch()
    (dev / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "ship-check.sh", dev / "scripts" / "ship-check.sh")
    _run(dev, sys.executable, "-c", "from pv.cli import main; main()", "evidence", "keygen", "ci-evidence.key")
    key = (dev / "ci-evidence.key").read_text()
    (dev / "ci-evidence.key").unlink()
    pyproject = dev / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'trusted_keys = "ci-evidence.key.pub"\n')
    (dev / ".gitignore").write_text("/.pv-evidence/\nevidence/.journal/\nevidence/.parts/\n__pycache__/\n.pv/\n")
    _run(dev, "git", "init", "-q", "-b", "main")
    _run(dev, "git", "add", "-A")
    _run(dev, "git", "commit", "-q", "-m", "a first contract, signing adopted", env=_env())
    _run(dev, "git", "remote", "add", "origin", str(remote))
    _run(dev, "git", "push", "-q", "origin", "main")
    return remote, key


def test_a_matrix_of_shards_merges_into_one_signed_published_run(tmp_path: Path) -> None:
    remote, key = _project(tmp_path)
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
    remote, key = _project(tmp_path)
    job = _clone(remote, tmp_path / "shard")
    for extra in (("--publish",), ("--parts", "somewhere")):
        done = _ci(job, "--shard", "1/2", *extra, key=key)
        assert done.returncode == 2 and "a shard only writes its part" in done.stderr
