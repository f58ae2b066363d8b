"""A bundle is never written over another, nor onto a ledger that is broken: each refusal names
what it found and leaves the contract's folder and its ledger as they were."""

from __future__ import annotations

import pytest

from pv.evidence import ledger as lg
from pv.evidence.writer import EvidenceError, Prepared, prepare, write_bundle
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def _prepared(project: Project) -> Prepared:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    return prepare(run, run.contracts["demo-v1"], project.contract.read_bytes(), project.root, ENV)


def test_a_bundle_already_there_is_not_written_over(project: Project) -> None:
    prepared = _prepared(project)
    first = write_bundle(prepared, project.evidence)
    before = (first / "bundle.json").read_bytes()
    with pytest.raises(EvidenceError) as info:
        write_bundle(prepared, project.evidence)
    assert str(info.value) == f"bundle {first} already exists"
    assert (first / "bundle.json").read_bytes() == before
    assert [e.run_id for e in lg.read(first.parent).entries] == [first.name]


def test_a_broken_ledger_takes_no_bundle_and_says_where_to_look(project: Project) -> None:
    first = write_bundle(_prepared(project), project.evidence)
    ledger_file = first.parent / lg.LEDGER_FILE
    ledger_file.write_text(ledger_file.read_text() + "{torn")
    problem = lg.read(first.parent).problems[0]
    with pytest.raises(EvidenceError) as info:
        write_bundle(_prepared(project), project.evidence)
    assert str(info.value) == (
        f"the ledger {ledger_file} is broken ({problem}); no evidence written: `pv evidence verify` says what happened"
    )
    assert [p.name for p in first.parent.iterdir() if p.is_dir()] == [first.name]
