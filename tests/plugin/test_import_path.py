"""One import rule for the CLI and the plugin: the project root comes first on sys.path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONTRACT = """\
metadata:
  id: own-code-v1
  version: 1.0.0
  description: A team's own claim, checked by its own checker package.
  references: ["internal"]
  changelog:
    - {version: 1.0.0, date: "2026-11-23", change: initial}
falsification_tests:
  - id: FALSIFY-OWN-001
    rule: doubling
    prediction: the function doubles its input
    check: mychecks.doubling:measure
    params: {x: 21}
    expect: "y == 42"
"""


def test_a_project_without_conftest_imports_its_checkers_in_pytest_as_in_lint(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject='[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["mychecks"]\n')
    pytester.mkdir("contracts")
    (pytester.path / "contracts" / "own-code-v1.yaml").write_text(CONTRACT)
    pytester.mkpydir("mychecks")
    (pytester.path / "mychecks" / "doubling.py").write_text(
        textwrap.dedent(
            """\
            from pv.checkers import checker


            @checker(observes=["y"])
            def measure(x: int) -> dict[str, int]:
                return {"y": 2 * x}
            """
        )
    )
    # The console scripts, as a user runs them: their sys.path starts at the scripts' folder, not
    # here (pytester.run would put the current directory on PYTHONPATH, hiding the difference).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=300)

    lint = run(_script("pv"), "lint", "--strict-test-binding")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    tests = run(_script("pytest"), "-p", "no:randomly", "contracts", "--pv-no-evidence")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout


def _script(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"the {name} console script is not installed"
    return found
