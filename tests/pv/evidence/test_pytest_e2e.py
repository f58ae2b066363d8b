"""End to end through the pv pytest plugin: a run writes bundles that verify and promote."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import yaml

from pv.evidence.status import backing_status
from pv.evidence.verify import find_bundles, verify_bundle
from pv.model import Status

# The harness seeds numpy and torch before every checker; pytester's in-process runs restore
# sys.modules afterwards and C extensions cannot load twice, so they are imported once here.
for _module in ("numpy", "torch"):
    with contextlib.suppress(ImportError):
        __import__(_module)

SYSTEM = """
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("e2e")
FAULTS.register("off_by_one", "the value is one too high")


def value():
    return 2.0 if FAULTS.active("off_by_one") else 1.0
"""

CHECKERS = """
import os

from pv.checkers import checker
from e2esystem import value


@checker(observes=["value", "pid"])
def measure(pv_artifacts):
    (pv_artifacts / "measure.log").write_text(f"value {value()}\\n")
    return {"value": value(), "pid": os.getpid()}
"""

MEASURE = "e2efalsifiers.checks:measure"
MUTANT = "e2esystem:off_by_one"


def contract(root: Path, cid: str, entries: list[dict[str, object]]) -> Path:
    data = {
        "metadata": {
            "id": cid,
            "version": "1.0.0",
            "status": "DRAFT",
            "description": f"e2e contract {cid}",
            "changelog": [{"version": "1.0.0", "date": "2026-01-01", "change": "initial"}],
        },
        "falsification_tests": [
            {"rule": "r", "prediction": "p", "check": MEASURE, "expect": "value == 1.0", **e} for e in entries
        ],
    }
    path = root / "contracts" / f"{cid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def e2e(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        pv_contracts = "contracts"
        pv_checker_packages = "e2efalsifiers"
        pv_fault_packages = "e2esystem"
        pythonpath = "."
        """
    )
    pytester.makepyfile(e2esystem=SYSTEM)
    pkg = pytester.mkpydir("e2efalsifiers")
    (pkg / "checks.py").write_text(CHECKERS)
    pytester.syspathinsert()
    root = pytester.path
    contract(
        root,
        "alpha-v1",
        [
            {"id": "FALSIFY-ALPHA-001", "ship_blocking": True, "mutant": MUTANT},
            {"id": "FALSIFY-ALPHA-002", "ship_blocking": True, "mutant": MUTANT},
            {"id": "FALSIFY-ALPHA-003", "ship_blocking": True, "requires": ["cuda"], "mutant": MUTANT},
            {"id": "FALSIFY-ALPHA-004", "expect": "value > 5"},  # advisory, falsified
        ],
    )
    contract(root, "beta-v1", [{"id": "FALSIFY-BETA-001", "ship_blocking": True, "mutant": MUTANT}])
    return pytester


def bundles(root: Path, evidence: str = "evidence") -> dict[str, Path]:
    found = find_bundles(root / evidence)
    return {b.parent.name: b for b in found}


def verdicts(bundle: Path) -> dict[str, str]:
    data = json.loads((bundle / "bundle.json").read_text())
    return {f["id"]: f["verdict"] for f in data["falsifiers"]}


def test_a_run_writes_one_verified_bundle_per_contract(e2e: pytest.Pytester) -> None:
    result = e2e.runpytest("--pv-mutants", "--pv-evidence", "-p", "no:cacheprovider")
    assert result.ret == 1  # the advisory falsifier fails its test
    found = bundles(e2e.path)
    assert sorted(found) == ["alpha-v1", "beta-v1"]
    alpha = found["alpha-v1"]
    assert verify_bundle(alpha).ok, verify_bundle(alpha).problems
    assert verdicts(alpha) == {
        "FALSIFY-ALPHA-001": "survived",
        "FALSIFY-ALPHA-002": "survived",
        "FALSIFY-ALPHA-003": "skipped",
        "FALSIFY-ALPHA-004": "falsified",
    }
    data = json.loads((alpha / "bundle.json").read_text())
    first = data["falsifiers"][0]
    assert first["mutant"] == {
        "declared": MUTANT,
        "verdict": "falsified",
        "killed": True,
        "observations": first["mutant"]["observations"],
        "message": first["mutant"]["message"],
    }
    assert data["falsifiers"][2]["skip_kind"] == "hardware"
    assert data["contract"]["path"] == "contracts/alpha-v1.yaml"
    logs = [a["path"] for a in data["artifacts"]]
    assert "artifacts/logs/FALSIFY-ALPHA-001/measure.log" in logs
    result.stdout.fnmatch_lines(["pv evidence: alpha-v1 -> evidence/alpha-v1/*"])
    # CUDA-gated falsifier skipped: algorithm level, then promote keeps the bundle current
    assert backing_status(e2e.path / "evidence", e2e.path / "contracts" / "alpha-v1.yaml") == (
        Status.ACTIVE_ALGORITHM_LEVEL,
        alpha,
    )


def test_deselected_falsifiers_are_not_run_and_untouched_contracts_get_nothing(e2e: pytest.Pytester) -> None:
    e2e.runpytest("-k", "FALSIFY-ALPHA-001", "--pv-evidence", "-p", "no:cacheprovider")
    found = bundles(e2e.path)
    assert list(found) == ["alpha-v1"]
    v = verdicts(found["alpha-v1"])
    assert v["FALSIFY-ALPHA-001"] == "survived"
    assert {v[k] for k in ("FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003", "FALSIFY-ALPHA-004")} == {"not_run"}


def test_a_plain_run_writes_no_evidence(e2e: pytest.Pytester) -> None:
    result = e2e.runpytest("-p", "no:cacheprovider")
    assert not (e2e.path / "evidence").exists()
    result.stdout.fnmatch_lines(["pv evidence: not written (pass --pv-evidence to record this run)"])


def test_no_evidence_and_evidence_dir_options(e2e: pytest.Pytester) -> None:
    e2e.runpytest("--pv-evidence", "--pv-no-evidence", "-p", "no:cacheprovider")
    assert not (e2e.path / "evidence").exists()
    e2e.runpytest("--pv-evidence", "--pv-evidence-dir", "out/ev", "-p", "no:cacheprovider")
    assert sorted(bundles(e2e.path, "out/ev")) == ["alpha-v1", "beta-v1"]
    e2e.runpytest("-o", "pv_evidence=from-ini", "-o", "pv_write_evidence=true", "-p", "no:cacheprovider")
    assert sorted(bundles(e2e.path, "from-ini")) == ["alpha-v1", "beta-v1"]
    # where the pv commands look: [tool.pv] evidence; and [tool.pv] write_evidence asks for it
    pyproject = e2e.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.pv]\nevidence = "from-tool-pv"\nwrite_evidence = true\n')
    e2e.runpytest("-p", "no:cacheprovider")
    assert sorted(bundles(e2e.path, "from-tool-pv")) == ["alpha-v1", "beta-v1"]


def test_two_xdist_workers_each_result_exactly_once(e2e: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = e2e.runpytest_subprocess("-n", "2", "--pv-mutants", "--pv-evidence", "-p", "no:cacheprovider")
    assert result.ret == 1, result.stdout.str()
    found = bundles(e2e.path)
    assert sorted(found) == ["alpha-v1", "beta-v1"]
    for bundle in found.values():
        assert verify_bundle(bundle).ok
    alpha = json.loads((found["alpha-v1"] / "bundle.json").read_text())
    assert [f["id"] for f in alpha["falsifiers"]] == [f"FALSIFY-ALPHA-00{i}" for i in range(1, 5)]
    workers = {f["worker"] for f in alpha["falsifiers"] if f["verdict"] != "skipped"}
    assert workers and workers <= {"gw0", "gw1"}  # measured on the workers, recorded by the controller
    assert alpha["summary"]["declared"] == 4 and alpha["summary"]["survived"] == 2
    # every artifact from every worker, once
    assert sorted(a["falsifier"] for a in alpha["artifacts"]) == [
        "FALSIFY-ALPHA-001",
        "FALSIFY-ALPHA-002",
        "FALSIFY-ALPHA-004",
    ]
