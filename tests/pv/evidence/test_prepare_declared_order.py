"""A run record that does not list what its contract declared (one recovered from an older journal)
still gets every falsifier of the contract in its bundle, in the contract's own order."""

from __future__ import annotations

import dataclasses

from pv.evidence.writer import prepare
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, record, result


def test_falsifiers_come_from_the_contract_when_the_run_lists_none(project: Project) -> None:
    run = record(project, [result("FALSIFY-DEMO-003", Verdict.SURVIVED)])
    contract = dataclasses.replace(run.contracts["demo-v1"], declared=[])
    prepared = prepare(run, contract, project.contract.read_bytes(), project.root, ENV)
    assert [e.id for e in prepared.bundle.falsifiers] == IDS
    assert [e.selected for e in prepared.bundle.falsifiers] == [False, False, True]
