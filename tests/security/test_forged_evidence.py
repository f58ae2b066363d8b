"""A forged bundle can never back a status in a repository that follows the README's adoption steps
(trusted_keys + require_signed), and a broken signature is tampering in every mode.

The forger has pv's own functions: they edit verdicts, recompute every digest, and may sign with a
key of their own or keep the old signature with the new statement in the envelope.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from pv.bundle.signing import Signer, generate
from pv.evidence.status import assess
from pv.evidence.verify import verify_bundle
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, project, reseal, result  # noqa: F401  (fixtures)
from tests.pv.evidence.test_cli import cli  # noqa: F401  (the fixture)
from tests.pv.evidence.test_signing import forge, signed_write

FALSIFIED = [result("FALSIFY-DEMO-001", Verdict.FALSIFIED), result("FALSIFY-DEMO-002", Verdict.FALSIFIED)]


def _adopt(proj: Project) -> Signer:
    """The README's steps: a CI key, its public half committed, trusted_keys and require_signed set."""
    private, public = generate()
    (proj.root / "ci-evidence.key.pub").write_bytes(public)
    pyproject = proj.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'trusted_keys = "ci-evidence.key.pub"\nrequire_signed = true\n')
    return Signer.from_pem(private)


def _resign_envelope_payload(bundle: Path) -> None:
    """Keep the old signature but put the forged statement in the envelope."""
    env_path = bundle / "statement.intoto.dsse.json"
    envelope = json.loads(env_path.read_text())
    envelope["payload"] = base64.b64encode((bundle / "statement.intoto.json").read_bytes()).decode()
    env_path.write_text(json.dumps(envelope))
    reseal(bundle, json.loads((bundle / "bundle.json").read_text()))


def _foreign_sign(bundle: Path) -> None:
    """Sign the forged statement with the forger's own key."""
    signer = Signer.from_pem(generate()[0])
    statement = (bundle / "statement.intoto.json").read_bytes()
    (bundle / "statement.intoto.dsse.json").write_text(json.dumps(signer.envelope(statement)))
    reseal(bundle, json.loads((bundle / "bundle.json").read_text()))


@pytest.mark.parametrize("shape", ["unsigned", "foreign", "broken-payload", "broken-signature"])
def test_a_forged_bundle_never_backs_a_status_after_adoption(
    cli,  # noqa: F811
    project: Project,  # noqa: F811
    shape: str,
) -> None:
    signer = _adopt(project)
    genuine = signed_write(project, signer, FALSIFIED)  # CI's signed run: the claim is falsified
    forged = signed_write(project, None if shape == "unsigned" else signer, FALSIFIED, "2026-03-02T10:00:00+00:00")
    forge(forged)  # every verdict survived, every digest recomputed
    if shape == "foreign":
        _foreign_sign(forged)
    elif shape == "broken-payload":
        _resign_envelope_payload(forged)
    elif shape == "broken-signature":
        env_path = forged / "statement.intoto.dsse.json"
        envelope = json.loads(env_path.read_text())
        envelope["payload"] = base64.b64encode((forged / "statement.intoto.json").read_bytes()).decode()
        envelope["signatures"][0]["sig"] = base64.b64encode(b"\x01" * 64).decode()
        env_path.write_text(json.dumps(envelope))
        reseal(forged, json.loads((forged / "bundle.json").read_text()))
    code, out = cli("evidence", "verify")
    assert code == 1
    expected = "untrusted" if shape in ("unsigned", "foreign") else "tampered"
    assert f"{expected:<12} evidence/demo-v1/{forged.name}" in out, out
    assert "trusting 1 key(s) from ci-evidence.key.pub" in out and "required (require_signed)" in out
    code, out = cli("promote")
    assert "status: DRAFT" in project.contract.read_text()  # the forgery promoted nothing
    # a status claimed by hand is caught by promote --check and lint's status gate
    project.contract.write_text(project.contract.read_text().replace("status: DRAFT", "status: ACTIVE"))
    code, out = cli("promote", "--check")
    # the forged bundle is one the ledger recorded, edited since: the evidence is blocked, not read
    assert code == 1 and "ACTIVE, BLOCKED" in out and "replaced or edited after it was recorded" in out, out
    code, out = cli("lint")
    assert code == 1 and "PVL70" in out
    assert genuine.exists()


def test_a_broken_signature_is_tampered_without_any_keys(project: Project) -> None:  # noqa: F811
    signer = Signer.from_pem(generate()[0])
    bundle = signed_write(project, signer, FALSIFIED)
    forge(bundle)
    _resign_envelope_payload(bundle)  # the envelope now carries the forged statement, under the old signature
    report = verify_bundle(bundle)
    assert report.status == "tampered" and "does not verify" in report.problems[0].detail
    assert assess(project.evidence, project.contract).status is Status.DRAFT


def test_require_signed_without_keys_is_a_configuration_error(cli, project: Project) -> None:  # noqa: F811
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "require_signed = true\n")
    for command in (("evidence", "verify"), ("promote",), ("promote", "--check")):
        code, out = cli(*command)
        assert code == 2 and "require_signed is set" in out and "pv evidence keygen" in out


def test_without_keys_every_command_says_the_evidence_is_unauthenticated_once(cli, project: Project) -> None:  # noqa: F811
    signed_write(project, None)
    for command in (("evidence", "verify"), ("promote", "--check"), ("report",)):
        _, out = cli(*command)
        assert out.lower().count("evidence is unauthenticated") == 1, (command, out)
