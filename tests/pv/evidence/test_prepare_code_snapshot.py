"""The code a bundle is bound to is taken from the contract's place under the project root, not
the process's working folder; and an edit to it during the run is refused naming every file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pv.evidence.code_binding import CodeScope
from pv.evidence.writer import EvidenceError, prepare
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def _scope(project: Project) -> CodeScope:
    (project.root / "system").mkdir()
    for name in ("a.py", "b.py"):
        (project.root / "system" / name).write_text("X = 1\n")
    return CodeScope(project.root, ("falsifiers",), ("system",))


def test_a_relative_contract_path_is_read_under_the_root(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = _scope(project)
    (project.root / "conftest.py").write_text("# root\n")
    (project.root / "contracts" / "conftest.py").write_text("# contracts\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # pv run from another folder: the record's path is relative to the root
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    contract = run.contracts["demo-v1"]
    assert not Path(contract.path).is_absolute()
    prepared = prepare(run, contract, project.contract.read_bytes(), project.root, ENV, scope)
    assert prepared.bundle.code is not None
    assert sorted(prepared.bundle.code.files) == ["conftest.py", "contracts/conftest.py", "system/a.py", "system/b.py"]


def test_every_file_edited_during_the_run_is_named(project: Project) -> None:
    scope = _scope(project)
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    measured = scope.snapshot(project.contract, {})
    contract = dataclasses.replace(run.contracts["demo-v1"], code=measured)
    for name in ("a.py", "b.py"):
        (project.root / "system" / name).write_text("X = 2\n")
    with pytest.raises(EvidenceError) as info:
        prepare(run, contract, project.contract.read_bytes(), project.root, ENV, scope)
    assert str(info.value) == (
        "the code it measures changed during the run (changed system/a.py, changed system/b.py); no evidence written"
    )
