"""Reading a part back refuses, in words that name the part and what is wrong with it, whatever is
not a whole part pv wrote; and the split's weights read past a spoiled bundle, in any locale."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pv.evidence.shards import PART_FILE, ShardError, key_of, read_part, recorded_durations, write_part
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, record, result
from tests.pv.review.test_review_locale import ascii_locale  # noqa: F401  (the fixture)

PLAN = {f"demo-v1::{fid}": 1 for fid in IDS}


def _written(project: Project, tmp_path: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_text("loss 1.0\n")
    results = [result(fid, Verdict.SURVIVED) for fid in IDS]
    results[0].artifacts = [str(log)]
    return write_part(record(project, results), project.evidence, 1, 1, PLAN, ENV)


def _refusal(folder: Path) -> str:
    with pytest.raises(ShardError) as refused:
        read_part(folder, None)
    return str(refused.value)


def _edit(folder: Path, change: dict[str, object]) -> None:
    data = json.loads((folder / PART_FILE).read_text())
    data.update(change)
    (folder / PART_FILE).write_text(json.dumps(data))


def test_a_folder_without_a_part_is_not_a_part(tmp_path: Path) -> None:
    assert _refusal(tmp_path) == f"{tmp_path}: not a part ({PART_FILE} unreadable: No such file or directory)"


def test_a_part_file_that_is_not_json_or_not_a_part_is_refused(project: Project, tmp_path: Path) -> None:
    folder = _written(project, tmp_path)
    (folder / PART_FILE).write_text("{half")
    assert _refusal(folder).startswith(f"{folder}: {PART_FILE} is not JSON: ")
    for text in ("[1, 2]", json.dumps({"format": "pv-evidence-part/0"}), json.dumps({"shard": 1})):
        (folder / PART_FILE).write_text(text)
        assert _refusal(folder) == f"{folder}: {PART_FILE} is not a pv evidence part (pv-evidence-part/1)"


def test_artifacts_outside_the_part_unlisted_or_changed_are_refused(project: Project, tmp_path: Path) -> None:
    folder = _written(project, tmp_path)
    [(rel, digest)] = json.loads((folder / PART_FILE).read_text())["files"].items()
    (folder / rel).write_text("loss 9.0\n")
    found = hashlib.sha256(b"loss 9.0\n").hexdigest()
    assert _refusal(folder) == f"{folder}: artifact {rel} is not the file the part lists (sha256 {found[:12]})"
    (folder / rel).write_text("loss 1.0\n")
    _edit(folder, {"files": {"../outside.log": digest}})
    assert _refusal(folder) == f"{folder}: artifact ../outside.log lies outside the part"
    _edit(folder, {"files": {}})
    assert _refusal(folder) == f"{folder}: FALSIFY-DEMO-001 names an artifact the part does not list"


def _bundle(root: Path, run_id: str, falsifiers: list[dict[str, object]], text: str | None = None) -> None:
    bundle = root / "demo-v1" / run_id
    bundle.mkdir(parents=True)
    doc = {"contract": {"id": "demo-v1"}, "falsifiers": falsifiers}
    (bundle / "bundle.json").write_bytes((text if text is not None else json.dumps(doc, ensure_ascii=False)).encode())


OLD, MID, NEW = (f"2026120{d}T000000000000Z-0000000{d}" for d in (1, 2, 3))


def test_a_spoiled_older_bundle_does_not_hide_the_newer_ones(tmp_path: Path) -> None:
    _bundle(tmp_path, OLD, [], text="{spoiled")
    _bundle(tmp_path, MID, [{"id": "FALSIFY-DEMO-001", "selected": True, "duration_s": 2.0}])
    _bundle(tmp_path, NEW, [{"id": "FALSIFY-DEMO-002", "selected": True, "duration_s": 3.0}])
    assert recorded_durations(tmp_path) == {
        key_of("demo-v1", "FALSIFY-DEMO-001"): 2.0,
        key_of("demo-v1", "FALSIFY-DEMO-002"): 3.0,
    }


def test_durations_are_read_as_utf8_whatever_the_locale(tmp_path: Path, ascii_locale: None) -> None:  # noqa: F811
    entry = {"id": "FALSIFY-DEMO-001", "selected": True, "duration_s": 2.5, "message": "loss ≤ 0.7·ln(V)"}
    _bundle(tmp_path, NEW, [entry])
    assert recorded_durations(tmp_path) == {key_of("demo-v1", "FALSIFY-DEMO-001"): 2.5}
