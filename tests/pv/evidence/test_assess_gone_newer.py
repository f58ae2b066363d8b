"""A falsifier whose newest decided verdict was in a bundle that is gone holds the contract at
DRAFT, named once as gone (never as "never run"), while the older bundle still counts for the rest."""

from __future__ import annotations

import shutil

from pv.evidence import ledger
from pv.evidence.status import assess
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer
from tests.pv.evidence.test_status import bundle_for


def test_a_newer_verdict_forgotten_holds_the_contract_at_draft(project: Project, write: Writer) -> None:
    older = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started="2026-03-01T10:00:00+00:00")
    # the newer run decided 001 (and the advisory 003); 002 was skipped there, so its verdict stands
    newer = bundle_for(write, Verdict.FALSIFIED, Verdict.SKIPPED, reason="no CUDA", started="2026-03-02T10:00:00+00:00")
    shutil.rmtree(newer)
    with ledger.locked(newer.parent) as chain:
        entry = chain.recorded()[newer.name]
        ledger.append(chain, "forgotten", newer.name, entry.digest, verdicts=entry.verdicts, reason="disk died")

    found = assess(project.evidence, project.contract)

    assert found.status is Status.DRAFT and not found.blocked
    gone = [
        f"{fid}: its newest verdict (falsified) was in bundle {newer.name}, which is gone (forgotten: disk died); "
        "run it again"
        for fid in ("FALSIFY-DEMO-001", "FALSIFY-DEMO-003")
    ]
    assert found.reasons[:2] == gone
    assert not any("never run" in reason for reason in found.reasons)
    assert found.bundle_path == older and found.bundle is not None and found.bundle.run_id == older.name
    assert list(found.sources) == ["FALSIFY-DEMO-002"] and found.sources["FALSIFY-DEMO-002"].bundle_path == older
    assert found.ignored == {} and found.rejected == []
