"""pv.git: the one git wrapper; every failure is a GitError that names the command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pv.git import GitError, run_git


def test_outside_a_repository_the_error_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"git rev-parse HEAD: .*not a git repository"):
        run_git(tmp_path, "rev-parse", "HEAD")


def test_text_and_bytes(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert run_git(tmp_path, "rev-parse", "--is-inside-work-tree").strip() == "true"
    assert run_git(tmp_path, "rev-parse", "--is-inside-work-tree", binary=True).strip() == b"true"


def test_a_git_that_hangs_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def hang(*args: object, **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(cmd="git", timeout=float(kwargs["timeout"]))  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess, "run", hang)
    with pytest.raises(GitError, match=r"git status: no answer within 5 s"):
        run_git(tmp_path, "status", timeout=5)
