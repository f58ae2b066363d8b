"""A blocked assessment's other fields: nothing falsified or counted, and what was set aside kept."""

from __future__ import annotations

import shutil

from pv.evidence.status import assess
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer
from tests.pv.evidence.test_status import bundle_for


def test_a_blocked_assessment_names_only_what_blocks_it(project: Project, write: Writer) -> None:
    older = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started="2026-03-01T10:00:00+00:00")
    stray = older.with_name("20260301T100000000000Z-00000000")  # a bundle the ledger never recorded
    shutil.copytree(older, stray)
    newest = bundle_for(write, Verdict.SURVIVED, Verdict.FALSIFIED, started="2026-03-02T10:00:00+00:00")
    (newest / "bundle.json").write_text((newest / "bundle.json").read_text().replace("falsified", "survived"))
    found = assess(project.evidence, project.contract)
    assert found.blocked and found.status is Status.DRAFT
    assert found.falsified == [] and found.sources == {} and found.counted == []
    assert list(found.ignored) == [stray] and "not recorded in ledger.jsonl" in found.ignored[stray]
