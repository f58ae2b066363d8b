"""`recover_all` over a folder of dead sessions' journals: which of them become bundles, that
those bundles carry the session's signature when a key is configured, and that a journal with
nothing to recover is removed without writing anything (and without stopping the others)."""

from __future__ import annotations

import pytest

from pv.bundle.signing import KeyRing, Signer, generate
from pv.evidence.journal import Journal, orphans, recover_all
from pv.evidence.verify import find_bundles, verify_bundle
from pv.results import FalsifierResult, Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result
from tests.pv.evidence.test_journal_records import _dead_pid, _journal


def dead_session(project: Project, run_id: str, pid: int, results: list[FalsifierResult]) -> Journal:
    """The journal a session that died after ``results`` leaves behind."""
    journal = _journal(project.evidence, run_id, pid)
    journal.session(record(project, results))
    journal.contract(project.contract_run())
    for r in results:
        nodeid = f"contracts/demo-v1.yaml::{r.falsify_id}"
        journal.start(nodeid, r.contract_id, r.falsify_id, r.ship_blocking)
        journal.result(nodeid, r)
    return journal


def test_a_recovered_bundle_is_signed_by_the_session_key(project: Project) -> None:
    private, public = generate()
    signer = Signer.from_pem(private)
    journal = dead_session(project, "run-1", _dead_pid(), [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    [outcome] = recover_all(project.evidence, project.root, lambda: ENV, signer)
    assert outcome.path is not None and not journal.path.exists()
    report = verify_bundle(outcome.path, keys=KeyRing.from_pem(public, "ci"))
    assert report.ok, report.problems
    assert report.signed_by == signer.key_id


def test_a_journal_without_a_session_line_is_removed_and_the_next_one_recovered(project: Project) -> None:
    pid = _dead_pid()
    headless = _journal(project.evidence, "run-0", pid)  # sorts first: read before the real one
    headless.start("contracts/demo-v1.yaml::FALSIFY-DEMO-001", "demo-v1", "FALSIFY-DEMO-001", True)
    real = dead_session(project, "run-1", pid, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    assert orphans(project.evidence) == [headless.path, real.path]
    [outcome] = recover_all(project.evidence, project.root, lambda: ENV)
    assert outcome.path is not None
    assert not headless.path.exists() and not real.path.exists()
    assert find_bundles(project.evidence) == [outcome.path]


def test_a_journal_whose_falsifiers_never_ran_writes_no_bundle(project: Project) -> None:
    skipped = [result(fid, Verdict.NOT_RUN, mutant=None) for fid in ("FALSIFY-DEMO-001", "FALSIFY-DEMO-003")]
    journal = dead_session(project, "run-1", _dead_pid(), skipped)
    asked: list[str] = []

    def environment() -> object:
        asked.append("env")
        return ENV

    assert recover_all(project.evidence, project.root, environment) == []  # type: ignore[arg-type]
    assert not journal.path.exists() and not find_bundles(project.evidence)
    assert asked == []  # nothing to write: the machine is never even described


@pytest.mark.parametrize("verdict", [Verdict.SURVIVED, Verdict.FALSIFIED, Verdict.ERROR])
def test_one_reached_verdict_among_not_run_ones_is_recovered(project: Project, verdict: Verdict) -> None:
    results = [result("FALSIFY-DEMO-001", verdict), result("FALSIFY-DEMO-003", Verdict.NOT_RUN, mutant=None)]
    dead_session(project, "run-1", _dead_pid(), results)
    [outcome] = recover_all(project.evidence, project.root, lambda: ENV)
    assert outcome.path is not None and find_bundles(project.evidence) == [outcome.path]
