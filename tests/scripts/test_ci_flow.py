"""Signed evidence in CI, end to end, on a local bare remote: the README's "Signing in CI" path.

The project is the README's first contract with signing adopted (a CI key, its public half
committed, trusted_keys set).  The CI steps are `scripts/ship-check.sh` as the workflow calls it:

- on the protected branch, with the secret: the falsifiers run against the code, their bundles
  are signed and appended to the ledgers on the evidence branch (`pv-evidence`), which that step
  alone pushes;
- on a pull request, without it: the same checks on the evidence branch's bundles plus the PR's
  own unsigned run, which is reported and never published nor counted.

A status moves on main by a pull request that runs `pv promote` over the evidence branch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts.test_adoption import readme_steps

ROOT = Path(__file__).resolve().parents[2]
BRANCH = "pv-evidence"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PV_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid"}
    return env | extra


def _run(cwd: Path, *argv: str, env: dict[str, str] | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env or _env(), check=False)
    if ok:
        assert done.returncode == 0, f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}"
    return done


def _clone(remote: Path, where: Path, branch: str = "main") -> Path:
    _run(where.parent, "git", "clone", "-q", "-b", branch, str(remote), where.name)
    return where


def _ci(checkout: Path, *args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = _env(PV_SIGNING_KEY=key) if key else _env()
    return _run(checkout, "bash", "scripts/ship-check.sh", "--evidence-branch", BRANCH, *args, env=env, ok=False)


def promote_over_evidence_branch(dev: Path) -> None:
    """What a developer does to move a status: `pv promote` over the evidence branch, checked out."""
    _run(dev, "git", "fetch", "-q", "origin", BRANCH)
    _run(dev, "git", "worktree", "add", "-q", "--detach", ".pv-evidence", "FETCH_HEAD")
    promoted = _run(dev, "pv", "promote", env=_env(PV_EVIDENCE=str(dev / ".pv-evidence")))
    assert "DRAFT -> ACTIVE" in promoted.stdout, promoted.stdout


def _branch_files(remote: Path) -> list[str]:
    out = _run(remote, "git", "ls-tree", "-r", "--name-only", BRANCH).stdout
    return sorted(out.split())


def signing_adopted(tmp_path: Path) -> tuple[Path, Path, str]:
    """(bare remote, developer checkout, CI's private key): the README's first contract with
    signing adopted, pushed to main."""
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
    (dev / "ci-evidence.key").unlink()  # the private half is CI's secret, never committed
    pyproject = dev / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'trusted_keys = "ci-evidence.key.pub"\n')
    (dev / ".gitignore").write_text("/.pv-evidence/\nevidence/.journal/\nevidence/.parts/\n__pycache__/\n.pv/\n")
    _run(dev, "git", "init", "-q", "-b", "main")
    _run(dev, "git", "add", "-A")
    _run(dev, "git", "commit", "-q", "-m", "a first contract, signing adopted", env=_env())
    _run(dev, "git", "remote", "add", "origin", str(remote))
    _run(dev, "git", "push", "-q", "origin", "main")
    return remote, dev, key


def test_signed_evidence_reaches_the_evidence_branch_and_moves_a_status_only_on_main(tmp_path: Path) -> None:
    remote, dev, key = signing_adopted(tmp_path)

    # 1. CI on main, with the secret: a signed run, published; the declared DRAFT is not what it backs
    ci = _clone(remote, tmp_path / "ci-1")
    done = _ci(ci, "--publish", key=key)
    assert done.returncode == 1 and "FAILED steps: promote-check" in done.stdout, done.stdout + done.stderr
    assert "would change DRAFT -> ACTIVE" in done.stdout
    published = _branch_files(remote)
    assert "mean-v1/ledger.jsonl" in published and any(f.endswith("statement.intoto.dsse.json") for f in published)

    # 2. a developer promotes over the evidence branch, on a pull request
    _run(dev, "git", "switch", "-q", "-c", "promote")
    promote_over_evidence_branch(dev)
    _run(dev, "git", "commit", "-q", "-am", "mean-v1: ACTIVE on CI's signed run")
    _run(dev, "git", "push", "-q", "origin", "promote")

    # 3. CI on that pull request, without the secret: green; its own unsigned run is never published
    pr = _clone(remote, tmp_path / "ci-pr", "promote")
    done = _ci(pr, "--pr")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "untrusted" in done.stdout and "promote-check  (skipped" in done.stdout
    assert _branch_files(remote) == published

    # 4. merged; CI on main signs a second run and the status it declares is the one it backs
    _run(dev, "git", "switch", "-q", "main")
    _run(dev, "git", "merge", "-q", "--ff-only", "promote")
    _run(dev, "git", "push", "-q", "origin", "main")
    ci2 = _clone(remote, tmp_path / "ci-2")
    done = _ci(ci2, "--publish", key=key)
    assert done.returncode == 0, done.stdout + done.stderr
    ledger = _run(remote, "git", "show", f"{BRANCH}:mean-v1/ledger.jsonl").stdout.splitlines()
    assert len(ledger) == 2

    # 5. a pull request that breaks the claim fails its CI and changes nothing on the evidence branch
    _run(dev, "git", "switch", "-q", "-c", "broken")
    stats = dev / "mysystem" / "stats.py"
    stats.write_text(stats.read_text().replace("/ len(xs)", "/ (len(xs) + 1)"))
    _run(dev, "git", "commit", "-q", "-am", "a faster mean")
    _run(dev, "git", "push", "-q", "origin", "broken")
    broken = _clone(remote, tmp_path / "ci-broken", "broken")
    before = _branch_files(remote)
    done = _ci(broken, "--pr")
    assert done.returncode == 1 and "FAILED steps: falsifiers" in done.stdout, done.stdout + done.stderr
    assert _branch_files(remote) == before
    done = _run(broken, "bash", "scripts/ship-check.sh", "--pr", "--publish", "--evidence-branch", BRANCH, ok=False)
    assert done.returncode == 2 and "never publishes" in done.stderr

    # 6. everything on the evidence branch verifies against the committed public key alone
    check = _clone(remote, tmp_path / "audit", BRANCH)
    verified = _run(ci2, "pv", "evidence", "verify", env=_env(PV_EVIDENCE=str(check)))
    assert "2 bundles: 2 ok; signatures checked against 1 trusted key(s)" in verified.stdout, verified.stdout
