"""Day one on a team's own code: a fresh project reaches a green ship-blocking run with mutants.

Nothing here touches sys.path, PYTHONPATH or the system under test: the checker package is called
``falsifiers`` (the name the harness's own repository uses, which the installed wheel must not
shadow), the system imports nothing from pv, and the mutant is a patch planted from the checker
package.  The commands are the console scripts a user runs.
"""

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
  id: double-v1
  version: 1.0.0
  description: The team's doubling function doubles.
  references: ["internal design note"]
  changelog:
    - {version: 1.0.0, date: "2026-11-23", change: initial}
falsification_tests:
  - id: FALSIFY-DOUBLE-001
    rule: doubling
    prediction: double(21) is 42
    check: falsifiers.doubling:measure_double
    params: {x: 21}
    expect: "y == 42"
    ship_blocking: true
    mutant: falsifiers.mutants:double_off_by_one
"""

SYSTEM = """\
def double(x):
    return 2 * x
"""

CHECKER = """\
from pv import checker

from mysystem.math import double


@checker(observes=["y"], ids=["FALSIFY-DOUBLE-001"])
def measure_double(x: int) -> dict[str, int]:
    return {"y": double(x)}
"""

MUTANTS = """\
from pv import PatchFaults

FAULTS = PatchFaults("mysystem")


@FAULTS.replace("mysystem.math:double", "doubles one too many", also=["falsifiers.doubling:double"])
def double_off_by_one(x):
    return 2 * x + 1
"""


def _script(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"the {name} console script is not installed"
    return found


def test_a_fresh_project_reaches_a_green_ship_blocking_run_with_mutants(pytester: pytest.Pytester) -> None:
    root = pytester.path
    (root / "pyproject.toml").write_text('[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["falsifiers"]\n')
    for package, files in {"mysystem": {"math.py": SYSTEM}, "falsifiers": {}}.items():
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
        for name, text in files.items():
            (root / package / name).write_text(text)
    (root / "contracts").mkdir()
    (root / "contracts" / "double-v1.yaml").write_text(CONTRACT)
    # The console scripts, as a user runs them: their sys.path starts at the scripts' folder, not
    # here (pytester.run would put the current directory on PYTHONPATH and hide the difference).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300)

    scaffold = run(_script("pv"), "scaffold", "contracts/double-v1.yaml")
    assert scaffold.returncode == 0, scaffold.stdout + scaffold.stderr
    assert "def measure_double" in (root / "falsifiers" / "doubling.py").read_text()
    # The stub raises until written; the team writes the measurement and the mutant.
    (root / "falsifiers" / "doubling.py").write_text(CHECKER)
    (root / "falsifiers" / "mutants.py").write_text(MUTANTS)

    lint = run(_script("pv"), "lint", "--strict-test-binding")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    green = run(_script("pytest"), "-p", "no:randomly", "-m", "ship_blocking", "--pv-mutants", "--pv-no-evidence")
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout and "1 killed" in green.stdout, green.stdout
    assert "pv" not in (root / "mysystem" / "math.py").read_text()

    # The mutant is real: a checker that stops looking at the system lets it survive.
    (root / "falsifiers" / "doubling.py").write_text(CHECKER.replace("double(x)}", "2 * x}"))
    vacuous = run(_script("pytest"), "-p", "no:randomly", "-m", "ship_blocking", "--pv-mutants", "--pv-no-evidence")
    assert vacuous.returncode == 1 and "VACUOUS" in vacuous.stdout, vacuous.stdout
    assert textwrap.dedent(SYSTEM) == (root / "mysystem" / "math.py").read_text()
