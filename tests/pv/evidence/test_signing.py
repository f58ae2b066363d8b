"""Signed evidence: DSSE envelopes over the statement, trusted keys, forgeries rejected."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from pv.bundle.signing import KeyRing, Signer, SigningError, check_envelope, generate, pae
from pv.evidence.status import assess
from pv.evidence.verify import verify_bundle
from pv.evidence.writer import write_run
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, all_survive, record, reseal, result
from tests.pv.evidence.test_cli import cli  # noqa: F401  (the fixture)


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Signer, Path]:
    private, public = generate()
    (tmp_path / "ci.key").write_bytes(private)
    (tmp_path / "trusted.pem").write_bytes(public)
    return Signer.from_pem(private), tmp_path / "trusted.pem"


def signed_write(
    project: Project, signer: Signer | None, results: list | None = None, started: str = "2026-03-01T10:00:00+00:00"
) -> Path:
    [outcome] = write_run(
        record(project, results or all_survive(), started=started), project.evidence, project.root, ENV, signer
    )
    assert outcome.path is not None, outcome.reason
    return outcome.path


def forge(bundle: Path, verdict: str = "survived") -> None:
    """What an attacker with pv's own functions can do: edit verdicts, recompute every digest."""
    data = json.loads((bundle / "bundle.json").read_text())
    for f in data["falsifiers"]:
        f["verdict"] = verdict
        f["mutant"]["verdict"], f["mutant"]["killed"] = "falsified", True
    reseal(bundle, data)


def test_pae_is_the_dsse_v1_encoding() -> None:
    assert pae("a/b", b"hello") == b"DSSEv1 3 a/b 5 hello"


def test_a_signed_bundle_verifies_against_its_key_and_no_other(project: Project, keys: tuple[Signer, Path]) -> None:
    signer, trusted = keys
    bundle = signed_write(project, signer)
    envelope = json.loads((bundle / "statement.intoto.dsse.json").read_text())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert base64.b64decode(envelope["payload"]) == (bundle / "statement.intoto.json").read_bytes()
    report = verify_bundle(bundle, keys=KeyRing.from_file(trusted))
    assert report.ok and report.signed_by == signer.key_id
    other = KeyRing.from_pem(generate()[1], "other")
    report = verify_bundle(bundle, keys=other)
    assert report.status == "untrusted" and "not trusted" in report.problems[0].detail
    # without trusted keys the signature is still checked against the key it carries, and noted
    unchecked = verify_bundle(bundle)
    assert unchecked.ok and "no trusted keys configured" in unchecked.notes[0]


def test_a_forged_bundle_with_recomputed_digests_is_rejected_with_trusted_keys(
    project: Project, keys: tuple[Signer, Path]
) -> None:
    signer, trusted = keys
    bundle = signed_write(project, signer, [result(i, Verdict.FALSIFIED) for i in ("FALSIFY-DEMO-001",)])
    forge(bundle)
    # every digest checks out, but the signature is of another statement: tampered in every mode
    for ring in (None, KeyRing.from_file(trusted)):
        report = verify_bundle(bundle, keys=ring)
        assert report.status == "tampered" and "not this bundle's statement" in report.problems[0].detail
    unsigned = signed_write(project, None, started="2026-03-02T10:00:00+00:00")
    assert verify_bundle(unsigned, keys=KeyRing.from_file(trusted)).status == "untrusted"


def test_unsigned_or_forged_bundles_never_promote_when_keys_are_configured(
    cli,  # noqa: F811
    project: Project,
    keys: tuple[Signer, Path],
) -> None:
    signer, trusted = keys
    signed_write(project, None)  # unsigned, all survived
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'trusted_keys = "{trusted}"\n')
    code, out = cli("promote")
    assert code == 0 and "DRAFT" in out and "ACTIVE" not in project.contract.read_text().split("kind:")[0]
    code, out = cli("evidence", "verify")
    assert code == 1 and "untrusted" in out
    signed_write(project, signer, started="2026-03-02T10:00:00+00:00")
    assert cli("promote")[0] == 0
    assert "status: ACTIVE" in project.contract.read_text()
    code, out = cli("evidence", "verify", "--trusted-keys", str(trusted))
    assert "1 untrusted" in out and "signed by" in out


def test_a_forged_future_folder_cannot_stay_newest(project: Project) -> None:
    real = signed_write(project, None, [result("FALSIFY-DEMO-001", Verdict.FALSIFIED)])
    forged = real.with_name("20991231T000000000000Z-deadbeef")
    real.rename(forged)
    assert verify_bundle(forged).status == "tampered"  # the run id must carry the run's own start time
    data = json.loads((forged / "bundle.json").read_text())
    data["run_id"], data["started_at"] = forged.name, "2099-12-31T00:00:00+00:00"
    for f in data["falsifiers"]:
        f["verdict"] = "survived"
    reseal(forged, data)
    report = verify_bundle(forged)
    assert report.status == "tampered" and any("in the future" in p.detail for p in report.problems)
    # the ledger still names the real run, which is gone: the contract is blocked, and no later run
    # can be written onto the broken chain until that is said (`pv evidence forget`)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT and any(real.name in b and "gone" in b for b in found.blocked)


def test_bad_keys_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "x.pem").write_text("not a key")
    with pytest.raises(SigningError, match="no PEM public key"):
        KeyRing.from_file(tmp_path / "x.pem")
    with pytest.raises(SigningError, match="not a PEM private key"):
        Signer.from_pem(b"nope")
    with pytest.raises(SigningError, match="cannot read"):
        KeyRing.from_file(tmp_path / "missing.pem")


def test_check_envelope_in_every_mode() -> None:
    private, public = generate()
    ring = KeyRing.from_pem(public, "k")
    other = KeyRing.from_pem(generate()[1], "other")
    envelope = Signer.from_pem(private).envelope(b"{}")
    assert check_envelope(envelope, b"{}", ring).status == "trusted"
    assert check_envelope(envelope, b"{}", other).status == "untrusted"
    assert check_envelope(envelope, b"{}", None).status == "unchecked"
    sig = envelope["signatures"][0]
    broken = [
        {**envelope, "payloadType": "x"},
        {**envelope, "signatures": []},
        {**envelope, "signatures": [{**sig, "sig": base64.b64encode(b"0" * 64).decode()}]},  # does not verify
        {**envelope, "signatures": [{**sig, "publicKey": other_key_b64()}]},  # key id is not the carried key's
        {**envelope, "payload": base64.b64encode(b'{"a": 1}').decode()},  # another statement
    ]
    for ring_or_none in (ring, other, None):
        for bad in broken:
            assert check_envelope(bad, b"{}", ring_or_none).status == "tampered", (bad, ring_or_none)
    legacy = {**envelope, "signatures": [{k: v for k, v in sig.items() if k != "publicKey"}]}
    assert check_envelope(legacy, b"{}", ring).status == "trusted"  # a trusted key needs no carried key
    # a signature nobody can check is never read as "unsigned": without its key it is tampering
    assert check_envelope(legacy, b"{}", None).status == "tampered"
    assert check_envelope(legacy, b"{}", other).status == "tampered"
    zeroed = {**envelope, "signatures": [{"keyid": "0" * 64, "sig": sig["sig"]}]}
    for ring_or_none in (ring, other, None):
        assert check_envelope(zeroed, b"{}", ring_or_none).status == "tampered"


def other_key_b64() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    raw = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    return base64.b64encode(raw).decode()


def test_keygen_writes_a_secret_key_and_a_public_key(cli, project: Project) -> None:  # noqa: F811
    code, out = cli("evidence", "keygen", "ci.key")
    assert code == 0, out
    key = project.root / "ci.key"
    assert key.stat().st_mode & 0o777 == 0o600
    Signer.from_pem(key.read_bytes())
    KeyRing.from_file(project.root / "ci.key.pub")
    assert cli("evidence", "keygen", "ci.key")[0] == 2  # never overwritten by accident


def test_a_missing_trusted_keys_file_is_a_configuration_error_never_a_silent_off(
    cli,  # noqa: F811
    project: Project,
) -> None:
    signed_write(project, None)
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'trusted_keys = "no-such-keys.pem"\n')
    for args in (["evidence", "verify"], ["promote", "--check"], ["report"], ["status"]):
        code, out = cli(*args)
        assert code == 2 and "no-such-keys.pem" in out, (args, out)
    code, out = cli("lint", "--format", "json")
    assert code == 1 and "no-such-keys.pem" in out


def test_unsigned_bundles_pass_verify_only_when_allowed_and_gc_prunes_them_once_keys_are_trusted(
    cli,  # noqa: F811
    project: Project,
    keys: tuple[Signer, Path],
) -> None:
    signer, trusted = keys
    before_signing = signed_write(project, None, started="2026-03-01T10:00:00+00:00")  # written before adoption
    signed = signed_write(project, signer, started="2026-03-02T10:00:00+00:00")
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'trusted_keys = "{trusted}"\n')
    code, out = cli("evidence", "verify")
    assert code == 1 and f"untrusted    evidence/demo-v1/{before_signing.name}" in out, out
    code, out = cli("evidence", "verify", "--allow-untrusted")  # a pull request's own run: reported, not failed
    assert code == 0 and "1 untrusted" in out, out
    code, out = cli("evidence", "gc", "--keep", "5")
    assert code == 0 and f"removed evidence/demo-v1/{before_signing.name}" in out, out
    assert signed.exists() and not before_signing.exists()
    kinds = [json.loads(x)["kind"] for x in (project.evidence / "demo-v1" / "ledger.jsonl").read_text().splitlines()]
    assert kinds == ["bundle", "bundle", "pruned"]
    assert cli("evidence", "verify")[0] == 0


def test_backing_status_hands_the_trusted_keys_to_the_assessment(project: Project, keys: tuple[Signer, Path]) -> None:
    from pv.evidence.status import backing_status

    signer, trusted = keys
    bundle = signed_write(project, signer)
    assert backing_status(project.evidence, project.contract, KeyRing.from_file(trusted)) == (Status.ACTIVE, bundle)
    other = KeyRing.from_pem(generate()[1], "other")
    assert backing_status(project.evidence, project.contract, other) == (Status.DRAFT, None)
