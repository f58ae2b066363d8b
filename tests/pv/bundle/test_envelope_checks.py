"""Each way a signed bundle's envelope can be wrong, and what pv says about it: the status a
reviewer acts on and the reason it prints.  Built from pv's own signer, then spoiled one field at
a time."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pv.bundle.signing import (
    PAYLOAD_TYPE,
    EnvelopeCheck,
    KeyRing,
    Signer,
    SigningError,
    check_envelope,
    generate,
    public_pem,
)

PAYLOAD = b'{"statement": 1}'


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer.from_pem(generate()[0])


@pytest.fixture(scope="module")
def other() -> Signer:
    return Signer.from_pem(generate()[0])


def _spoiled(envelope: dict[str, Any], **sig: Any) -> dict[str, Any]:
    out = copy.deepcopy(envelope)
    for key, value in sig.items():
        if value is None:
            del out["signatures"][0][key]
        else:
            out["signatures"][0][key] = value
    return out


def test_a_good_signature(signer: Signer, other: Signer) -> None:
    envelope = signer.envelope(PAYLOAD)
    kid = signer.key_id
    assert check_envelope(envelope, PAYLOAD, KeyRing.of([signer.key.public_key()])) == EnvelopeCheck("trusted", kid)
    assert check_envelope(envelope, PAYLOAD, None) == EnvelopeCheck("unchecked", why=f"signed by {kid[:16]}")
    assert check_envelope(envelope, PAYLOAD, KeyRing.of([other.key.public_key()])) == EnvelopeCheck(
        "untrusted", why=f"signed only by keys that are not trusted: {kid[:16]}"
    )


def test_two_signatures_are_listed_and_a_trusted_one_wins(signer: Signer, other: Signer) -> None:
    both = signer.envelope(PAYLOAD)
    both["signatures"] += other.envelope(PAYLOAD)["signatures"]
    names = f"{signer.key_id[:16]}, {other.key_id[:16]}"
    assert check_envelope(both, PAYLOAD, None).why == f"signed by {names}"
    third = KeyRing.of([Signer.from_pem(generate()[0]).key.public_key()])
    assert check_envelope(both, PAYLOAD, third).why == f"signed only by keys that are not trusted: {names}"
    trusting_other = KeyRing.of([other.key.public_key()])
    assert check_envelope(both, PAYLOAD, trusting_other) == EnvelopeCheck("trusted", other.key_id)


def test_a_trusted_key_named_without_carrying_it(signer: Signer) -> None:
    bare = _spoiled(signer.envelope(PAYLOAD), publicKey=None)
    assert check_envelope(bare, PAYLOAD, KeyRing.of([signer.key.public_key()])).status == "trusted"
    assert check_envelope(bare, PAYLOAD, None) == EnvelopeCheck(
        "tampered",
        why=f"the signature of key {signer.key_id[:16]} carries no public key and names no trusted key: "
        "it cannot be checked",
    )


def _tampered(why: str) -> EnvelopeCheck:
    return EnvelopeCheck("tampered", why=why)


@pytest.mark.parametrize("ring", [None, "trusting"])
def test_each_spoiled_field_is_tampering(signer: Signer, other: Signer, ring: str | None) -> None:
    keys = KeyRing.of([signer.key.public_key()]) if ring else None
    good = signer.envelope(PAYLOAD)
    kid = signer.key_id[:16]

    def check(envelope: Any) -> EnvelopeCheck:
        return check_envelope(envelope, PAYLOAD, keys)

    assert check([good]) == _tampered(f"not a DSSE envelope of {PAYLOAD_TYPE}")
    assert check({**good, "payloadType": "text/plain"}) == _tampered(f"not a DSSE envelope of {PAYLOAD_TYPE}")
    assert check({**good, "payload": "not base64!"}) == _tampered("the envelope's payload is not base64")
    assert check({k: v for k, v in good.items() if k != "payload"}) == _tampered(
        "the signed payload is not this bundle's statement"
    )
    other_payload = base64.b64encode(b'{"statement": 2}').decode()
    assert check({**good, "payload": other_payload}) == _tampered("the signed payload is not this bundle's statement")
    for signatures in (None, [], ["x"]):
        assert check({**good, "signatures": signatures}) == _tampered("an envelope without signatures")
    assert check(_spoiled(good, sig="@@@")) == _tampered(f"the signature of key {kid} is not base64")
    assert check(_spoiled(good, sig=None)) == _tampered(
        f"the signature of key {kid} does not verify against the statement"
    )
    assert check(_spoiled(good, keyid="", sig="@@@")) == _tampered("the signature of key ? is not base64")
    assert check(_spoiled(good, publicKey="@@@")) == _tampered(f"the public key carried for {kid} does not load")
    assert check(_spoiled(good, keyid="", publicKey="@@@")) == _tampered("the public key carried for ? does not load")
    assert check(_spoiled(good, keyid=other.key_id)) == _tampered(
        f"key id {other.key_id[:16]} is not the id of the key it carries"
    )
    assert check(_spoiled(good, keyid="")) == _tampered("key id ? is not the id of the key it carries")
    forged = other.envelope(b"something else")["signatures"][0]["sig"]
    assert check(_spoiled(good, sig=forged)) == _tampered(
        f"the signature of key {kid} does not verify against the statement"
    )


def test_a_signature_in_loose_base64_is_tampering(signer: Signer) -> None:
    good = signer.envelope(PAYLOAD)
    loose = good["signatures"][0]["sig"][:10] + "\n" + good["signatures"][0]["sig"][10:]
    assert check_envelope(_spoiled(good, sig=loose), PAYLOAD, None).status == "tampered"
    payload = good["payload"][:4] + "\n" + good["payload"][4:]
    assert check_envelope({**good, "payload": payload}, PAYLOAD, None) == _tampered(
        "the envelope's payload is not base64"
    )


# --- keys -----------------------------------------------------------------------------------------


def test_key_ring_from_a_file_of_several_keys(tmp_path: Path, signer: Signer, other: Signer) -> None:
    path = tmp_path / "trusted.pem"
    path.write_bytes(public_pem(signer.key.public_key()) + b"\n# a comment \xff\n" + public_pem(other.key.public_key()))
    ring = KeyRing.from_file(path)
    assert set(ring.keys) == {signer.key_id, other.key_id} and ring.source == str(path)
    given = KeyRing.of([signer.key.public_key()])
    assert set(given.keys) == {signer.key_id} and given.source == "given keys"


def test_key_ring_errors_name_the_file_and_the_key(tmp_path: Path, signer: Signer) -> None:
    with pytest.raises(SigningError) as caught:
        KeyRing.from_file(tmp_path / "absent.pem")
    assert str(caught.value) == f"{tmp_path / 'absent.pem'}: cannot read: No such file or directory"
    with pytest.raises(SigningError) as caught:
        KeyRing.from_pem(b"nothing here", "keys.pem")
    assert str(caught.value) == "keys.pem: no PEM public key (-----BEGIN PUBLIC KEY-----) found"
    ec = generate_private_key(SECP256R1()).public_key()
    ec_pem = ec.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(SigningError) as caught:
        KeyRing.from_pem(public_pem(signer.key.public_key()) + ec_pem, "keys.pem")
    assert str(caught.value) == f"keys.pem: key 2 is {type(ec).__name__}; trusted keys are ed25519"
    broken = b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"
    with pytest.raises(SigningError) as caught:
        KeyRing.from_pem(broken, "keys.pem")
    assert str(caught.value).startswith("keys.pem: key 1 does not load: ")


def test_signer_errors_name_where_the_key_came_from(tmp_path: Path) -> None:
    with pytest.raises(SigningError) as caught:
        Signer.from_pem(b"junk")
    assert str(caught.value).startswith("signing key: not a PEM private key without a password: ")
    ec = generate_private_key(SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(SigningError) as caught:
        Signer.from_pem(ec, "ci secret")
    name = type(serialization.load_pem_private_key(ec, password=None)).__name__
    assert str(caught.value) == f"ci secret: the key is {name}, pv signs with ed25519"
    path = tmp_path / "key.pem"
    path.write_bytes(b"junk")
    with pytest.raises(SigningError) as caught:
        Signer.from_environment(path)
    assert str(caught.value).startswith(f"{path}: not a PEM private key")
    assert isinstance(Signer.from_pem(generate()[0]).key, Ed25519PrivateKey)
