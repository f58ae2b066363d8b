"""Lint's status gate judges evidence with the project's trusted keys, as promote and verify do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pv.bundle.signing import Signer, generate
from tests.pv.evidence.conftest import Project
from tests.pv.evidence.test_cli import cli  # noqa: F401  (the fixture)
from tests.pv.evidence.test_signing import keys, signed_write  # noqa: F401  (the fixture)


def _status_codes(out: str) -> list[str]:
    report = json.loads(out)
    return sorted(f["code"] for f in report["findings"] if f["gate"] == "status")


@pytest.fixture
def promoted(cli, project: Project, keys: tuple[Signer, Path]) -> Path:  # type: ignore[no-untyped-def]  # noqa: F811
    """The demo contract promoted to ACTIVE on a bundle signed by the key `trusted.pem` holds."""
    signer, trusted = keys
    signed_write(project, signer)
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'trusted_keys = "{trusted}"\n')
    assert cli("promote")[0] == 0
    assert "status: ACTIVE" in project.contract.read_text()
    return pyproject


def test_a_status_backed_by_a_trusted_signature_passes_lint(cli, promoted: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _, out = cli("lint", "--format", "json")
    assert _status_codes(out) == [], out


def test_a_status_backed_only_by_a_key_outside_the_trusted_ring_is_unbacked(  # type: ignore[no-untyped-def]
    cli,  # noqa: F811
    project: Project,
    promoted: Path,
) -> None:
    # the ring now holds another key: the same bundle no longer backs anything
    other = project.root / "other.pem"
    other.write_bytes(generate()[1])
    promoted.write_text(promoted.read_text().replace("trusted.pem", "other.pem"))
    code, out = cli("lint", "--format", "json")
    assert code == 1 and _status_codes(out) == ["PVL701"], out
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "PVL701")
    assert "no verified, current bundle" in finding["hint"]
    # promote --check reads the same ring and agrees
    assert cli("promote", "--check")[0] == 1


def test_an_unsigned_bundle_backs_nothing_once_keys_are_trusted(  # type: ignore[no-untyped-def]
    cli,  # noqa: F811
    project: Project,
    keys: tuple[Signer, Path],  # noqa: F811
) -> None:
    _, trusted = keys
    signed_write(project, None)
    assert cli("promote")[0] == 0  # no keys yet: the unsigned run counts
    code, out = cli("lint", "--format", "json")
    assert _status_codes(out) == [], out
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'trusted_keys = "{trusted}"\n')
    code, out = cli("lint", "--format", "json")
    assert code == 1 and _status_codes(out) == ["PVL701"], out
