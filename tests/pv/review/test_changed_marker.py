"""``--pv-changed-since REF``: the falsifiers a change touches carry ``pv_changed``, advisory ones too."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.pv.review.helpers import CONTRACT, means_project

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(where: pytest.Pytester, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=where.path, check=True)


def test_only_what_the_change_touches_is_marked(pytester: pytest.Pytester) -> None:
    contract = means_project(pytester, "value >= 1", "false")
    _git(pytester, "init", "-q", "-b", "main")
    _git(pytester, "add", "-A")
    _git(pytester, "commit", "-q", "-m", "base")

    def marked() -> list[str]:
        done = pytester.runpytest("contracts", "-m", "pv_changed", "--pv-changed-since", "main", "--collect-only", "-q")
        assert done.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), done.errlines
        out = done.stdout.str()
        assert re.search(r"(^|\D)2 tests collected|\(2 deselected\)", out), out  # both falsifiers were collected
        return sorted(line.split("::")[1] for line in done.outlines if "::FALSIFY-" in line)

    assert marked() == []
    contract.write_text(CONTRACT.format(bound="value >= 1.5", blocking="false"))  # one bound moves
    assert marked() == ["FALSIFY-MEAN-002"]
    stats = pytester.path / "mysystem" / "stats.py"
    stats.write_text(stats.read_text() + "\n# a comment is a change of the code under test too\n")
    assert marked() == ["FALSIFY-MEAN-001", "FALSIFY-MEAN-002"]
    done = pytester.runpytest("contracts", "--pv-changed-since", "no-such-ref", "--collect-only", "-q")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    assert "--pv-changed-since no-such-ref" in "\n".join(done.errlines)
