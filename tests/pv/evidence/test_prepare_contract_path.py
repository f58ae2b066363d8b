"""The contract path a bundle records: relative to the project root whether the run recorded it
relative or absolute and whatever folder pv runs from; a contract outside the root keeps the path
it was given.  And a contract that no longer loads is refused with the loader's reason."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pv.bundle.digest import ContractUnreadable, contract_data
from pv.evidence.writer import EvidenceError, prepare
from pv.results import ContractRun, RunRecord, Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def _recorded_path(project: Project, run: RunRecord, contract: ContractRun) -> str:
    return prepare(run, contract, project.contract.read_bytes(), project.root, ENV).bundle.contract.path


def test_the_path_is_relative_to_the_root(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    relative = run.contracts["demo-v1"]
    absolute = dataclasses.replace(relative, path=str(project.contract))
    (project.root / "sub").mkdir()
    monkeypatch.chdir(project.root / "sub")  # a relative path is the root's, not the working folder's
    assert _recorded_path(project, run, relative) == "contracts/demo-v1.yaml"
    assert _recorded_path(project, run, absolute) == "contracts/demo-v1.yaml"


def test_a_contract_outside_the_root_keeps_its_path(project: Project, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside" / "demo-v1.yaml"
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    contract = dataclasses.replace(run.contracts["demo-v1"], path=str(outside))
    assert _recorded_path(project, run, contract) == outside.as_posix()


def test_a_contract_that_no_longer_loads_is_refused_with_the_reason(project: Project) -> None:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    broken = b"metadata: [\n"
    with pytest.raises(ContractUnreadable) as loader:
        contract_data(broken)
    with pytest.raises(EvidenceError) as info:
        prepare(run, run.contracts["demo-v1"], broken, project.root, ENV)
    assert str(info.value) == f"the contract no longer loads: {loader.value}"
