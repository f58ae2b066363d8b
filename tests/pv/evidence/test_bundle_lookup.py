"""Bundle.falsifier: the entry of an id, and None for an id the bundle does not hold."""

from __future__ import annotations

import json

from pv.bundle.model import Bundle
from pv.evidence.writer import write_run
from tests.pv.evidence.conftest import ENV, Project, all_survive, record


def test_an_id_the_bundle_does_not_hold_is_none(project: Project) -> None:
    [outcome] = write_run(record(project, all_survive()), project.evidence, project.root, ENV)
    assert outcome.path is not None
    bundle = Bundle(**json.loads((outcome.path / "bundle.json").read_text()))
    entry = bundle.falsifier("FALSIFY-DEMO-001")
    assert entry is not None and entry.id == "FALSIFY-DEMO-001"
    assert bundle.falsifier("FALSIFY-NOPE-999") is None
