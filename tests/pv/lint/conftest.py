"""Fixture trees for the lint gates live in tests/fixtures/lint/<case>/ (pyproject + contracts/)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pv.config import load_config
from pv.lint import LintOptions, LintReport, lint

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"

Runner = Callable[..., LintReport]


@pytest.fixture(autouse=True)
def _isolated_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # lint puts each tree's root on sys.path; keep that from leaking between tests, and make the
    # shared fixture checker packages (lintfx, lintfx_orphan) importable
    monkeypatch.setattr(sys, "path", [str(FIXTURES), *sys.path])


@pytest.fixture
def run_fixture() -> Runner:
    """Lint a fixture tree in place, without touching .pv/ (the fixtures stay read-only)."""

    def run(case: str, **options: object) -> LintReport:
        options.setdefault("use_state", False)
        return lint(load_config(FIXTURES / case), LintOptions(**options))  # type: ignore[arg-type]

    return run


@pytest.fixture
def tree_copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a fixture tree to tmp_path so that a test may write .pv/ and edit contracts."""

    def copy(case: str) -> Path:
        dest = tmp_path / case
        shutil.copytree(FIXTURES / case, dest)
        return dest

    return copy


def lint_dir(root: Path, **options: object) -> LintReport:
    return lint(load_config(root), LintOptions(**options))  # type: ignore[arg-type]
