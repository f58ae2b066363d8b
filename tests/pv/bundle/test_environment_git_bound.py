"""The environment is captured on every run, so each git call it makes is bounded: git gets at
most 20 s, and a git that times out leaves the commit unknown instead of holding the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pv.bundle import environment
from pv.git import GitError


def test_every_git_call_is_bounded_and_a_timeout_leaves_the_commit_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts: list[Any] = []

    def hanging_git(root: Path, *args: str, timeout: float | None = None) -> str:
        timeouts.append(timeout)
        raise GitError(f"git {' '.join(args)} did not answer within {timeout} s")

    monkeypatch.setattr(environment, "run_git", hanging_git)
    assert environment.git_state(tmp_path) == (None, None)
    assert timeouts and all(t is not None and 0 < t <= 20 for t in timeouts)
