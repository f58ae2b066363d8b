"""verify: an untouched bundle passes; every kind of tampering and an edited contract are caught."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pv.bundle.digest import dumps
from pv.evidence.verify import find_bundles, verify_bundle, verify_path
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer, all_survive, result


@pytest.fixture
def bundle(write: Writer, tmp_path: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_text("step 0 loss 2.1\n")
    results = all_survive()
    results[0].artifacts = [str(log)]
    return write(results)


def flip_byte(path: Path, offset: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_untouched_bundle_verifies(bundle: Path) -> None:
    report = verify_bundle(bundle)
    assert report.ok and report.status == "ok" and report.problems == [] and report.notes == []
    assert report.bundle is not None and report.bundle.run_id == bundle.name


@pytest.mark.parametrize("name", ["bundle.json", "statement.intoto.json", "artifacts/logs/FALSIFY-DEMO-001/train.log"])
def test_a_changed_byte_is_tampering(bundle: Path, name: str) -> None:
    flip_byte(bundle / name)
    report = verify_bundle(bundle)
    assert not report.ok and report.status == "tampered"
    assert any(p.file == name and "sha256" in p.detail for p in report.problems)


def test_a_changed_manifest_is_tampering(bundle: Path) -> None:
    manifest = bundle / "MANIFEST.sha256"
    manifest.write_text(manifest.read_text().replace("  bundle.json", "  bundle.jsoN"))
    report = verify_bundle(bundle)
    assert report.status in ("missing", "tampered") and not report.ok


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("artifacts/logs/FALSIFY-DEMO-001/train.log", "missing"),
        ("statement.intoto.json", "missing"),
        ("MANIFEST.sha256", "incomplete"),
    ],
)
def test_a_missing_file_is_reported(bundle: Path, name: str, status: str) -> None:
    (bundle / name).unlink()
    report = verify_bundle(bundle)
    assert report.status == status and not report.ok
    if status == "missing":
        assert [p.file for p in report.problems if p.kind == "missing"] == [name]


def test_an_added_file_is_tampering(bundle: Path) -> None:
    (bundle / "artifacts" / "plots").mkdir(parents=True)
    (bundle / "artifacts" / "plots" / "extra.png").write_bytes(b"png")
    report = verify_bundle(bundle)
    assert report.status == "tampered" and report.problems[0].file == "artifacts/plots/extra.png"


def _rewrite_consistently(bundle: Path, edit: callable) -> None:  # type: ignore[valid-type]
    """A careful forger: edit bundle.json and fix up the manifest, leaving the statement alone."""
    data = json.loads((bundle / "bundle.json").read_text())
    edit(data)
    text = dumps(data)
    (bundle / "bundle.json").write_text(text)
    manifest = bundle / "MANIFEST.sha256"
    lines = [
        f"{hashlib.sha256(text.encode()).hexdigest()}  bundle.json" if line.endswith("  bundle.json") else line
        for line in manifest.read_text().splitlines()
    ]
    manifest.write_text("\n".join(lines) + "\n")


def test_a_consistent_forgery_still_disagrees_with_the_statement(bundle: Path) -> None:
    _rewrite_consistently(bundle, lambda d: d["falsifiers"][1].update(verdict="falsified"))
    report = verify_bundle(bundle)
    assert report.status == "tampered" and report.problems[0].file == "statement.intoto.json"


def test_schema_errors_are_reported(bundle: Path) -> None:
    _rewrite_consistently(bundle, lambda d: d["falsifiers"][0].update(verdict="passed", colour="green"))
    report = verify_bundle(bundle)
    assert report.status == "schema_error"
    details = " ".join(p.detail for p in report.problems)
    assert "passed" in details and "colour" in details


def test_unknown_schema_version_is_a_schema_error(bundle: Path) -> None:
    _rewrite_consistently(bundle, lambda d: d.update(schema_version=99))
    assert verify_bundle(bundle).status == "schema_error"


def test_edited_contract_makes_the_bundle_stale(project: Project, bundle: Path) -> None:
    project.contract.write_text(project.contract.read_text().replace('"step0_loss <= 3.0"', '"step0_loss <= 30.0"'))
    report = verify_bundle(bundle)
    assert report.status == "stale" and report.intact and not report.ok
    assert report.problems[0].detail == "contract edited since the run without a version bump"


def test_deleted_contract_makes_the_bundle_stale(project: Project, bundle: Path) -> None:
    project.contract.unlink()
    assert verify_bundle(bundle).status == "stale"


def test_comment_only_edit_is_noted_not_stale(project: Project, bundle: Path) -> None:
    project.contract.write_text(project.contract.read_text() + "# a trailing remark\n")
    report = verify_bundle(bundle)
    assert report.ok and report.notes


def test_promotion_edits_do_not_stale(project: Project, bundle: Path) -> None:
    text = project.contract.read_text().replace("status: DRAFT  ", "status: ACTIVE ")
    text = text.replace(
        "  changelog:\n",
        '  changelog:\n    - {version: 1.0.0, date: "2026-03-02", change: promoted, evidence: evidence/demo-v1/x}\n',
    )
    project.contract.write_text(text)
    assert verify_bundle(bundle).ok
    # the same entry without `evidence` is a real changelog edit
    project.contract.write_text(text.replace(", evidence: evidence/demo-v1/x", ""))
    assert verify_bundle(bundle).status == "stale"


def test_renamed_bundle_folder_is_tampering(bundle: Path) -> None:
    moved = bundle.with_name("20990101T000000000000Z-deadbeef")
    bundle.rename(moved)
    report = verify_bundle(moved)
    assert report.status == "tampered" and "run_id" in report.problems[0].detail


def test_find_bundles_at_every_level_and_ignores_tmp(project: Project, write: Writer) -> None:
    a = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED)], started="2026-03-01T10:00:00+00:00")
    b = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED)], started="2026-03-02T10:00:00+00:00")
    leftover = a.parent / f".tmp-{b.name}-12345"
    shutil.copytree(b, leftover)
    assert find_bundles(project.evidence) == [a, b]
    assert find_bundles(a.parent) == [a, b]
    assert find_bundles(b) == [b]
    assert [r.ok for r in verify_path(project.evidence)] == [True, True]
