"""How a result's files reach its bundle: each artifact records the path it was copied from; files
that vanished before the copy are named in one note, in the order reported, and a result whose files
are all there gets no note; and every folder of the bundle is synced to disk before its parent and
before the bundle is renamed into place, so a crash never leaves a bundle whose listing is lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pv.evidence import writer
from pv.results import Verdict
from tests.pv.evidence.conftest import Writer, result


def _falsifier(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = data["falsifiers"][0]
    entry["bundle_artifacts"] = data["artifacts"]
    return entry


def test_each_artifact_records_its_source_and_a_complete_set_gets_no_note(write: Writer, tmp_path: Path) -> None:
    log = tmp_path / "work" / "train.log"
    log.parent.mkdir()
    log.write_text("step 0 loss 2.1\n")
    entry = _falsifier(write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(log)])]))
    assert [a["source"] for a in entry["bundle_artifacts"]] == [str(log)]
    assert entry["message"] == ""  # what a survived result without files says


def test_every_vanished_file_is_named_in_one_note(write: Writer, tmp_path: Path) -> None:
    kept = tmp_path / "kept.log"
    kept.write_text("kept\n")
    gone, lost = str(tmp_path / "gone.log"), str(tmp_path / "lost.png")
    entry = _falsifier(write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[gone, str(kept), lost])]))
    assert entry["message"].splitlines()[-1] == f"artifacts reported but not found: {gone}, {lost}"
    assert [a["source"] for a in entry["bundle_artifacts"]] == [str(kept)]


def test_every_folder_is_synced_before_its_parent_and_before_the_rename(
    write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Path] = []
    monkeypatch.setattr(writer, "_fsync_dir", synced.append)
    work = tmp_path / "work"
    (work / "ckpt" / "shard").mkdir(parents=True)
    (work / "ckpt" / "shard" / "model.safetensors").write_bytes(b"\0" * 16)
    (work / "train.log").write_text("step 0\n")
    bundle = write(
        [result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(work / "train.log"), str(work / "ckpt")])]
    )

    *inside, last = synced
    assert last == bundle.parent  # the folder the bundle was renamed into, after the rename
    tmp = inside[-1]  # the bundle's own folder, under the name it had before the rename
    assert tmp.parent == bundle.parent and tmp.name.startswith(writer.TMP_PREFIX)
    as_published = [bundle / d.relative_to(tmp) for d in inside]
    assert sorted(as_published) == sorted([bundle, *(d for d in bundle.rglob("*") if d.is_dir())])
    for i, d in enumerate(as_published):  # no folder before one inside it
        assert not any(later.is_relative_to(d) and later != d for later in as_published[i + 1 :])
