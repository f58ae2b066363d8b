"""The base of a comparison is read in the project's dialect: in the rust dialect a file without
`metadata` at the base was a data file, so every falsifier its head version declares is new."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pv.project import Project
from pv.review.changed import changed_falsifiers
from tests.pv.review.test_review_in_process import _git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BODY = """\
falsification_tests:
  - id: FALSIFY-EXP-001
    rule: positivity
    prediction: exp(x) > 0 for x in [-80, 80].
    if_fails: Underflow is flushed to a negative value.
"""
METADATA = "metadata:\n  version: 1.0.0\n  description: Elementwise exponential.\n"


@pytest.mark.parametrize(("dialect", "new"), [("rust", True), ("pv", False)])
def test_a_data_file_that_became_a_contract_declares_new_falsifiers(tmp_path: Path, dialect: str, new: bool) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.pv]\ndialect = "{dialect}"\n')
    contract = tmp_path / "contracts" / "exp-kernel-v1.yaml"
    contract.parent.mkdir()
    contract.write_text(BODY)  # no metadata: a data file to the rust dialect, a broken contract to pv's
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    contract.write_text(METADATA + BODY)
    changed = changed_falsifiers(Project.open(tmp_path), "HEAD", [contract])
    assert [(c.falsifier_id, c.new, c.reasons) for c in changed] == (
        [("FALSIFY-EXP-001", True, ["new falsifier"])] if new else []
    )
