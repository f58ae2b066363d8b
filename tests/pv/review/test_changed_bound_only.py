"""A change to a contract's bound alone is the bound moving, never "code edited", even where the
contract's own file lies inside a package the project measures (its scope then holds the file)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pv.project import Project
from pv.review.changed import changed_falsifiers
from tests.pv.review.test_review_in_process import _git, reviewed  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_a_moved_bound_is_the_only_reason(reviewed: tuple[Path, Any]) -> None:  # noqa: F811
    root, _ = reviewed
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().rstrip() + '\ncode_packages = ["mysystem", "contracts"]\n')
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the head, committed")
    contract = root / "contracts" / "mean-v1.yaml"
    contract.write_text(contract.read_text().replace('expect: "value >= 2.5"', 'expect: "value >= 2.0"'))
    [changed] = changed_falsifiers(Project.open(root), "HEAD")
    assert (changed.falsifier_id, changed.reasons) == ("FALSIFY-MEAN-002", ["bound moved"])
    assert changed.bound == ("value >= 2.5", "value >= 2.0")
