"""A file that changes between the moment its digest is taken and its copy into the bundle is never
attested to: the write is refused naming every such file, in the bundle's order, and neither a
bundle nor its temporary folder is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence.writer import EvidenceError, prepare, write_bundle
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def test_artifacts_rewritten_before_their_copy_are_refused_by_name_and_nothing_is_left(
    project: Project, tmp_path: Path
) -> None:
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    for log in logs:
        log.write_text("step 0 loss 2.1\n")
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(p) for p in logs])])
    prepared = prepare(run, run.contracts["demo-v1"], project.contract.read_bytes(), project.root, ENV)
    for log in logs:
        log.write_text("step 0 loss 9.9\n")  # a checker still writing after it returned
    with pytest.raises(EvidenceError) as info:
        write_bundle(prepared, project.evidence)
    assert str(info.value) == (
        "artifacts changed while being copied: "
        "artifacts/logs/FALSIFY-DEMO-001/a.log, artifacts/logs/FALSIFY-DEMO-001/b.log"
    )
    contract_dir = project.evidence / "demo-v1"
    assert not [p for p in contract_dir.iterdir() if p.is_dir()]
