"""assess with no evidence at all: one reason, nothing falsified."""

from __future__ import annotations

from pv.evidence.status import assess
from tests.pv.evidence.conftest import Project


def test_no_evidence_has_nothing_falsified(project: Project) -> None:
    found = assess(project.evidence, project.contract)
    assert found.reasons == ["no evidence"] and found.falsified == []
