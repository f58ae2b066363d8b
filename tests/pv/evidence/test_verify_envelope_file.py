"""The signature envelope counts only when the manifest lists it and it is there: listed but
deleted, it is missing and the bundle unsigned; present but unlisted, it was added and the bundle is
still unsigned; unreadable, it is named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.bundle.model import ENVELOPE_FILE, MANIFEST_FILE
from pv.bundle.signing import KeyRing, Signer, generate
from pv.evidence.verify import verify_bundle
from pv.evidence.writer import write_run
from tests.pv.evidence.conftest import ENV, Project, all_survive, record
from tests.pv.evidence.test_verify_problems import _remanifest

UNSIGNED = ("untrusted", ENVELOPE_FILE, "unsigned, and trusted keys are configured")


@pytest.fixture
def signed(project: Project) -> tuple[Path, KeyRing]:
    private, public = generate()
    [outcome] = write_run(record(project, all_survive()), project.evidence, project.root, ENV, Signer.from_pem(private))
    assert outcome.path is not None
    return outcome.path, KeyRing.from_pem(public, "ci")


def _problems(bundle: Path, keys: KeyRing | None) -> list[tuple[str, str, str]]:
    return [(p.kind, p.file, p.detail) for p in verify_bundle(bundle, keys=keys).problems]


def test_a_listed_envelope_deleted_is_missing_and_the_bundle_unsigned(signed: tuple[Path, KeyRing]) -> None:
    bundle, keys = signed
    assert _problems(bundle, keys) == []
    (bundle / ENVELOPE_FILE).unlink()
    missing = ("missing", ENVELOPE_FILE, "file listed in the manifest is missing")
    assert _problems(bundle, keys) == [missing, UNSIGNED]
    assert _problems(bundle, None) == [missing]


def test_an_envelope_the_manifest_does_not_list_is_added_and_not_a_signature(signed: tuple[Path, KeyRing]) -> None:
    bundle, keys = signed
    manifest = bundle / MANIFEST_FILE
    manifest.write_text("".join(line for line in manifest.read_text().splitlines(True) if ENVELOPE_FILE not in line))
    report = verify_bundle(bundle, keys=keys)
    assert [(p.kind, p.file, p.detail) for p in report.problems] == [
        ("tampered", ENVELOPE_FILE, "file not in the manifest (added)"),
        UNSIGNED,
    ]
    assert report.signed_by is None


def test_an_envelope_that_is_not_json_is_named(signed: tuple[Path, KeyRing]) -> None:
    bundle, keys = signed
    (bundle / ENVELOPE_FILE).write_text("{torn")
    _remanifest(bundle)
    problems = _problems(bundle, keys)
    assert [(kind, file) for kind, file, _ in problems] == [
        ("schema_error", ENVELOPE_FILE),
        ("tampered", ENVELOPE_FILE),
    ]
    assert problems[0][2].startswith("not JSON: ")
    assert problems[1][2] == "not a DSSE envelope of application/vnd.in-toto+json"
