"""pv inventory: observations no expect reads, registered faults no falsifier kills."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pv.results import Verdict

from .cli_trees import Invoke, Result, write_bundle

CHECKS = """
from pv.checkers import checker


@checker(observes=["loss", "steps", "note"])
def train(limit: float) -> dict:
    return {"loss": 1.0, "steps": 3, "note": "ok"}


@checker(observes=["x"])
def unused() -> dict:
    return {"x": 1}
"""

FAULTS = """
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("inv")
FAULTS.register("bad_init", "weights start from garbage")
FAULTS.register("unplanted", "a defect no contract plants")
"""

CONTRACT = """
metadata:
  id: inv-v1
  version: 1.0.0
  description: A contract for the inventory.
falsification_tests:
  - id: FALSIFY-INV-001
    prediction: The loss stays under the limit.
    check: invchecks.checks:train
    params: {limit: 3.0}
    expect: "loss <= limit"
    ship_blocking: true
    mutant: invchecks.faults:bad_init
"""


def _forget(*packages: str) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[name]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project whose packages are imported afresh: each test's tree is another folder."""
    _forget("invchecks", "faultsonly")
    yield _write_project(tmp_path / "proj")
    _forget("invchecks", "faultsonly")


def _write_project(root: Path) -> Path:
    (root / "invchecks").mkdir(parents=True)
    (root / "contracts").mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["invchecks"]\nevidence = "evidence"\n'
    )
    (root / "invchecks" / "__init__.py").write_text("")
    (root / "invchecks" / "checks.py").write_text(textwrap.dedent(CHECKS))
    (root / "invchecks" / "faults.py").write_text(textwrap.dedent(FAULTS))
    (root / "contracts" / "inv-v1.yaml").write_text(CONTRACT.lstrip())
    return root


def test_unread_observations_unused_checkers_and_faults_nothing_kills(cli: Invoke, project: Path) -> None:
    code, out = cli("inventory", "--json", cwd=project, stdout_only=True)
    assert code == 0, out
    data = json.loads(out)
    checkers = {c["checker"]: c for c in data["checkers"]}
    train = checkers["invchecks.checks:train"]
    assert train["falsifiers"] == ["inv-v1:FALSIFY-INV-001"]
    assert train["read"] == ["loss"]  # `limit` is a param, not an observation
    assert train["unread"] == ["steps", "note"]
    assert checkers["invchecks.checks:unused"]["falsifiers"] == []
    faults = {f["fault"]: f for f in data["faults"]}
    assert faults["invchecks.faults:bad_init"]["state"] == "not killed in evidence"  # no evidence yet
    assert faults["invchecks.faults:bad_init"]["mutant_of"] == ["inv-v1:FALSIFY-INV-001"]
    assert faults["invchecks.faults:unplanted"] == {
        "fault": "invchecks.faults:unplanted",
        "description": "a defect no contract plants",
        "mutant_of": [],
        "killed_by": [],
        "state": "no falsifier",
    }
    assert data["summary"].startswith("2 checkers (1 bound to no falsifier), 4 observations, 3 read by no expect")


def test_evidence_of_a_kill_moves_the_fault_off_the_list(cli: Invoke, project: Path) -> None:
    write_bundle(project, "inv-v1", [Result("FALSIFY-INV-001", Verdict.SURVIVED, killed=True)])
    code, out = cli("inventory", "--json", cwd=project, stdout_only=True)
    assert code == 0
    faults = {f["fault"]: f for f in json.loads(out)["faults"]}
    assert faults["invchecks.faults:bad_init"]["killed_by"] == ["inv-v1:FALSIFY-INV-001"]
    assert faults["invchecks.faults:bad_init"]["state"] == "killed"
    code, out = cli("inventory", cwd=project)
    assert "invchecks.faults:unplanted" in out and "invchecks.faults:bad_init" not in out  # the table lists gaps
    code, out = cli("inventory", "--all", cwd=project)
    assert "invchecks.faults:bad_init" in out


def test_a_surviving_mutant_in_evidence_is_not_a_kill(cli: Invoke, project: Path) -> None:
    write_bundle(project, "inv-v1", [Result("FALSIFY-INV-001", Verdict.SURVIVED, killed=False)])
    code, out = cli("inventory", "--json", cwd=project, stdout_only=True)
    assert code == 0
    faults = {f["fault"]: f for f in json.loads(out)["faults"]}
    assert faults["invchecks.faults:bad_init"]["state"] == "not killed in evidence"


def test_a_mutant_whose_module_is_missing_is_an_error(cli: Invoke, project: Path) -> None:
    path = project / "contracts" / "inv-v1.yaml"
    path.write_text(path.read_text().replace("invchecks.faults:bad_init", "invchecks.gone:bad_init"))
    code, out = cli("inventory", cwd=project)
    assert code == 1
    assert "error: inv-v1:FALSIFY-INV-001: fault module 'invchecks.gone' failed to import" in out


def test_registries_are_found_without_importing_other_modules(cli: Invoke, project: Path) -> None:
    (project / "invchecks" / "boom.py").write_text("raise RuntimeError('imported')\n")
    (project / "invchecks" / "more_faults.py").write_text(
        "from pv.faults import FaultRegistry\nFAULTS = FaultRegistry('more')\nFAULTS.register('late', 'x')\n"
    )
    # discover() imports every checker module, so keep the exploding one out of the checker package
    (project / "faultsonly").mkdir()
    (project / "faultsonly" / "__init__.py").write_text("")
    (project / "faultsonly" / "boom.py").write_text("raise RuntimeError('imported')\n")
    (project / "faultsonly" / "registry.py").write_text(
        "from pv.faults import FaultRegistry\nFAULTS = FaultRegistry('fo')\nFAULTS.register('quiet', 'y')\n"
    )
    (project / "invchecks" / "boom.py").unlink()
    text = (project / "pyproject.toml").read_text() + 'fault_packages = ["faultsonly"]\n'
    (project / "pyproject.toml").write_text(text)
    code, out = cli("inventory", "--json", cwd=project, stdout_only=True)
    assert code == 0, out
    faults = {f["fault"] for f in json.loads(out)["faults"]}
    assert {"invchecks.more_faults:late", "faultsonly.registry:quiet"} <= faults
