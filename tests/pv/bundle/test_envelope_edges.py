"""A signature's key as an envelope names or carries it, spoiled: named by no id and carried not at
all, or carried with characters base64 does not have."""

from __future__ import annotations

import pytest

from pv.bundle.signing import EnvelopeCheck, Signer, check_envelope, generate

PAYLOAD = b'{"statement": 1}'


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer.from_pem(generate()[0])


def test_a_signature_naming_no_key_and_carrying_none_cannot_be_checked(signer: Signer) -> None:
    envelope = signer.envelope(PAYLOAD)
    del envelope["signatures"][0]["keyid"], envelope["signatures"][0]["publicKey"]
    assert check_envelope(envelope, PAYLOAD, None) == EnvelopeCheck(
        "tampered", why="the signature of key ? carries no public key and names no trusted key: it cannot be checked"
    )


def test_a_carried_key_with_characters_outside_base64_does_not_load(signer: Signer) -> None:
    envelope = signer.envelope(PAYLOAD)
    envelope["signatures"][0]["publicKey"] += "!!"
    assert check_envelope(envelope, PAYLOAD, None) == EnvelopeCheck(
        "tampered", why=f"the public key carried for {signer.key_id[:16]} does not load"
    )
