"""A file that changes between the moment its digest is taken and its copy into the bundle is never
attested to: the write is refused naming the file, and neither a bundle nor its temporary folder is
left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence.writer import EvidenceError, prepare, write_bundle
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def test_an_artifact_rewritten_before_its_copy_is_refused_and_nothing_is_left(project: Project, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 0 loss 2.1\n")
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(log)])])
    prepared = prepare(run, run.contracts["demo-v1"], project.contract.read_bytes(), project.root, ENV)
    log.write_text("step 0 loss 9.9\n")  # a checker still writing after it returned
    with pytest.raises(EvidenceError) as info:
        write_bundle(prepared, project.evidence)
    assert str(info.value) == "artifacts changed while being copied: artifacts/logs/FALSIFY-DEMO-001/train.log"
    contract_dir = project.evidence / "demo-v1"
    assert not [p for p in contract_dir.iterdir() if p.is_dir()]
