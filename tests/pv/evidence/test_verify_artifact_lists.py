"""bundle.json's artifacts and the manifest's must be the same set: an artifact only bundle.json
claims (a file that was never written) and one only the manifest lists (a file slipped in) are
each named."""

from __future__ import annotations

import json
from pathlib import Path

from pv.evidence.verify import verify_bundle
from pv.results import Verdict
from tests.pv.evidence.conftest import Writer, reseal, result
from tests.pv.evidence.test_verify_problems import _remanifest

DISAGREE = "bundle.json and the manifest disagree on this artifact"


def _bundle(write: Writer, tmp_path: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_text("step 0\n")
    return write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(log)])])


def test_an_artifact_only_bundle_json_claims_is_named(write: Writer, tmp_path: Path) -> None:
    bundle = _bundle(write, tmp_path)
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    ghost = {**data["artifacts"][0], "path": "artifacts/logs/FALSIFY-DEMO-001/ghost.log"}
    data["artifacts"].append(ghost)
    reseal(bundle, data)  # bundle.json and its statement rewritten
    _remanifest(bundle)
    problems = [(p.kind, p.file, p.detail) for p in verify_bundle(bundle).problems]
    assert problems == [("tampered", ghost["path"], DISAGREE)]


def test_an_artifact_only_the_manifest_lists_is_named(write: Writer, tmp_path: Path) -> None:
    bundle = _bundle(write, tmp_path)
    slipped = bundle / "artifacts" / "logs" / "FALSIFY-DEMO-001" / "slipped.log"
    slipped.write_text("not measured\n")
    _remanifest(bundle)
    problems = [(p.kind, p.file, p.detail) for p in verify_bundle(bundle).problems]
    assert problems == [("tampered", "artifacts/logs/FALSIFY-DEMO-001/slipped.log", DISAGREE)]
