"""The review judges evidence as promote does: its sections with the trusted keys given, and both
its sections and the head of its comparison bound to the contract through the project's root, on
every path a section is built by (a status pv decides on, a retired contract, a status pv cannot
read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pv.bundle.signing import KeyRing, Signer, generate
from pv.evidence.writer import write_run
from pv.project import Project as PvProject
from pv.review.compare import _head_entries as head_entries
from pv.review.compare import review
from pv.review.sections import Section, build
from tests.pv.evidence.conftest import ENV, Project, all_survive, record

STATUSES = ("DRAFT", "RETIRED", "FROZEN")  # decided; retired (left alone); not a status pv knows


@pytest.fixture
def ring(tmp_path: Path) -> tuple[Signer, KeyRing]:
    private, public = generate()
    (tmp_path / "trusted.pem").write_bytes(public)
    return Signer.from_pem(private), KeyRing.from_file(tmp_path / "trusted.pem")


def _status(project: Project, status: str) -> None:
    text = project.contract.read_text()
    project.contract.write_text(text.replace("status: DRAFT ", f"status: {status} "))


def _section(project: Project, keys: KeyRing | None) -> Section:
    (section,) = build(PvProject.open(project.root), [project.contract], keys).sections
    return section


def _write(project: Project, signer: Signer | None, evidence: Path | None = None) -> Path:
    [outcome] = write_run(record(project, all_survive()), evidence or project.evidence, project.root, ENV, signer)
    assert outcome.path is not None, outcome.reason
    return outcome.path


@pytest.mark.parametrize("status", STATUSES)
def test_a_bundle_the_trusted_key_signed_is_counted(
    project: Project, ring: tuple[Signer, KeyRing], status: str
) -> None:
    signer, keys = ring
    _write(project, signer)
    _status(project, status)
    section = _section(project, keys)
    assert [row.id for row in section.rows] == ["FALSIFY-DEMO-001", "FALSIFY-DEMO-002", "FALSIFY-DEMO-003"]
    if status == "DRAFT":
        assert (section.before, section.after) == ("DRAFT", "ACTIVE")


@pytest.mark.parametrize("status", STATUSES)
def test_an_unsigned_bundle_counts_for_nothing_once_keys_are_trusted(
    project: Project, ring: tuple[Signer, KeyRing], status: str
) -> None:
    _write(project, None)
    _status(project, status)
    assert _section(project, None).rows != []  # without keys, the same bundle is counted
    section = _section(project, ring[1])
    assert section.rows == [] and section.sources == []
    assert "unsigned" in section.reason or status == "FROZEN", section.reason
    if status == "DRAFT":
        assert (section.before, section.after) == ("DRAFT", "DRAFT")


@pytest.mark.parametrize("status", STATUSES)
def test_evidence_kept_outside_the_project_is_bound_through_its_root(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str
) -> None:
    kept = tmp_path / "elsewhere" / "kept" / "evidence"
    (project.root / "pyproject.toml").write_text(f'[tool.pv]\nevidence = "{os.path.relpath(kept, project.root)}"\n')
    _write(project, None, kept)
    _status(project, status)
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the evidence folder's parent nor the cwd is the root
    section = _section(project, None)
    assert [row.id for row in section.rows] == ["FALSIFY-DEMO-001", "FALSIFY-DEMO-002", "FALSIFY-DEMO-003"]


def test_a_rejected_newest_bundle_is_named_with_its_problems(project: Project, ring: tuple[Signer, KeyRing]) -> None:
    _write(project, None)  # unsigned, while keys are trusted ...
    text = project.contract.read_text()  # ... and measured on a contract since edited without a bump
    project.contract.write_text(text.replace("step0_loss <= 3.0", "step0_loss <= 2.5"))
    section = _section(project, ring[1])
    assert section.rows == []
    assert section.reason == (
        "newest bundle is untrusted: "
        "untrusted: statement.intoto.dsse.json: unsigned, and trusted keys are configured; "
        "stale: contracts/demo-v1.yaml: contract edited since the run without a version bump"
    )


def test_the_head_of_a_comparison_reads_evidence_kept_outside_the_project(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "elsewhere" / "kept" / "evidence"
    (project.root / "pyproject.toml").write_text(f'[tool.pv]\nevidence = "{os.path.relpath(kept, project.root)}"\n')
    bundle = _write(project, None, kept)
    monkeypatch.chdir(tmp_path / "elsewhere")
    entries, runs = head_entries(PvProject.open(project.root), kept / "demo-v1")
    assert sorted(entries) == ["FALSIFY-DEMO-001", "FALSIFY-DEMO-002", "FALSIFY-DEMO-003"]
    assert set(runs.values()) == {bundle.name}
    assert entries["FALSIFY-DEMO-001"]["verdict"] == "survived"


def test_the_whole_review_judges_with_the_keys_it_is_given(project: Project, ring: tuple[Signer, KeyRing]) -> None:
    _write(project, None)
    untrusting = review(PvProject.open(project.root), [project.contract])
    trusting = review(PvProject.open(project.root), [project.contract], None, ring[1])
    assert (untrusting.contracts[0].before, untrusting.contracts[0].after) == ("DRAFT", "ACTIVE")
    [entry] = trusting.contracts
    assert (entry.before, entry.after) == ("DRAFT", "DRAFT") and "unsigned" in entry.reason
