"""Signed evidence: the bundle's in-toto statement wrapped in a DSSE envelope, signed with ed25519.

The signature covers the statement's exact bytes, and the statement holds ``bundle.json`` as its
predicate and every artifact's sha256 as a subject, so one signature covers the whole bundle (the
``MANIFEST.sha256`` is derived from the same files).  The crypto is the ``cryptography`` package's;
what is written here is only the DSSE pre-authentication encoding (PAE) that the DSSE v1 spec
defines, and key files in the standard PEM forms.

Keys: ``pv evidence keygen`` writes a private key (PKCS#8 PEM) and its public key
(SubjectPublicKeyInfo PEM).  A *trusted keys* file holds one or more public keys, concatenated.
A key's id is the sha256 of its raw 32-byte public key, in hex.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"
SIGNING_KEY_ENV = "PV_SIGNING_KEY"  # the private key's PEM text (how CI passes a secret)
SIGNING_KEY_FILE_ENV = "PV_SIGNING_KEY_FILE"  # or a path to it
TRUSTED_KEYS_ENV = "PV_TRUSTED_KEYS"  # a path to the trusted public keys
_PEM_BLOCK = re.compile(r"-----BEGIN PUBLIC KEY-----.*?-----END PUBLIC KEY-----", re.DOTALL)


class SigningError(ValueError):
    """A key that cannot be read or is not ed25519."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what is actually signed."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(_raw(public)).hexdigest()


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def generate() -> tuple[bytes, bytes]:
    """(private key PEM, public key PEM) of a new ed25519 key."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return private, public_pem(key.public_key())


@dataclass(frozen=True)
class Signer:
    key: Ed25519PrivateKey

    @property
    def key_id(self) -> str:
        return key_id(self.key.public_key())

    @classmethod
    def from_pem(cls, pem: bytes, where: str = "signing key") -> Signer:
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningError(f"{where}: not a PEM private key without a password: {exc}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningError(f"{where}: the key is {type(key).__name__}, pv signs with ed25519")
        return cls(key)

    @classmethod
    def from_environment(cls, path: Path | None = None) -> Signer | None:
        """``path`` if given, else ``PV_SIGNING_KEY`` (PEM text), else ``PV_SIGNING_KEY_FILE``; None: unsigned."""
        if path is not None:
            return cls.from_pem(_read(path), str(path))
        text = os.environ.get(SIGNING_KEY_ENV, "").strip()
        if text:
            return cls.from_pem(text.encode(), f"${SIGNING_KEY_ENV}")
        file = os.environ.get(SIGNING_KEY_FILE_ENV, "").strip()
        if file:
            return cls.from_pem(_read(Path(file)), file)
        return None

    def envelope(self, payload: bytes, payload_type: str = PAYLOAD_TYPE) -> dict[str, Any]:
        sig = self.key.sign(pae(payload_type, payload))
        return {
            "payloadType": payload_type,
            "payload": base64.b64encode(payload).decode(),
            # the public key rides along (DSSE allows extra fields), so a signature that does not
            # match its statement is caught as tampering even where no keys are trusted
            "signatures": [
                {
                    "keyid": self.key_id,
                    "sig": base64.b64encode(sig).decode(),
                    "publicKey": base64.b64encode(_raw(self.key.public_key())).decode(),
                }
            ],
        }


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SigningError(f"{path}: cannot read: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class KeyRing:
    """Public keys whose signatures count, by key id."""

    keys: dict[str, Ed25519PublicKey]
    source: str = ""

    @classmethod
    def from_pem(cls, data: bytes, where: str) -> KeyRing:
        blocks = _PEM_BLOCK.findall(data.decode("ascii", errors="replace"))
        if not blocks:
            raise SigningError(f"{where}: no PEM public key (-----BEGIN PUBLIC KEY-----) found")
        keys: dict[str, Ed25519PublicKey] = {}
        for n, block in enumerate(blocks, 1):
            try:
                key = serialization.load_pem_public_key(block.encode())
            except ValueError as exc:
                raise SigningError(f"{where}: key {n} does not load: {exc}") from None
            if not isinstance(key, Ed25519PublicKey):
                raise SigningError(f"{where}: key {n} is {type(key).__name__}; trusted keys are ed25519")
            keys[key_id(key)] = key
        return cls(keys, where)

    @classmethod
    def from_file(cls, path: Path) -> KeyRing:
        return cls.from_pem(_read(path), str(path))

    @classmethod
    def of(cls, keys: Iterable[Ed25519PublicKey]) -> KeyRing:
        return cls({key_id(k): k for k in keys}, "given keys")


@dataclass(frozen=True)
class EnvelopeCheck:
    """What a bundle's signature says.

    ``trusted``: a trusted key's signature verifies.  ``tampered``: the envelope does not carry this
    statement, or a signature does not verify against it (by a trusted key, or by the key it
    carries): broken whatever keys are configured.  ``untrusted``: every signature that could be
    checked holds, but none is by a trusted key.  ``unchecked``: no keys are trusted, and the
    signatures hold as far as they can be checked (by the keys they carry)."""

    status: str  # "trusted" | "tampered" | "untrusted" | "unchecked"
    signed_by: str | None = None
    why: str = ""


def check_envelope(
    envelope: Any, payload: bytes, ring: KeyRing | None, payload_type: str = PAYLOAD_TYPE
) -> EnvelopeCheck:
    """Check a DSSE envelope against the statement it must carry, with or without trusted keys
    (``payload_type``: what the envelope must say it signs; an evidence part's is its own)."""
    if not isinstance(envelope, dict) or envelope.get("payloadType") != payload_type:
        return EnvelopeCheck("tampered", why=f"not a DSSE envelope of {payload_type}")
    try:
        carried = base64.b64decode(str(envelope.get("payload", "")), validate=True)
    except ValueError:
        return EnvelopeCheck("tampered", why="the envelope's payload is not base64")
    if carried != payload:
        return EnvelopeCheck("tampered", why="the signed payload is not this bundle's statement")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures or not all(isinstance(s, dict) for s in signatures):
        return EnvelopeCheck("tampered", why="an envelope without signatures")
    message = pae(payload_type, payload)
    trusted: str | None = None
    others: list[str] = []
    for sig in signatures:
        kid = str(sig.get("keyid", ""))
        try:
            raw_sig = base64.b64decode(str(sig.get("sig", "")), validate=True)
        except ValueError:
            return EnvelopeCheck("tampered", why=f"the signature of key {kid[:16] or '?'} is not base64")
        key = ring.keys.get(kid) if ring is not None else None
        if "publicKey" in sig:  # a carried key must be the key its id names, trusted or not
            try:
                carried_key = Ed25519PublicKey.from_public_bytes(base64.b64decode(str(sig["publicKey"]), validate=True))
            except ValueError:
                return EnvelopeCheck("tampered", why=f"the public key carried for {kid[:16] or '?'} does not load")
            if key_id(carried_key) != kid:
                return EnvelopeCheck("tampered", why=f"key id {kid[:16] or '?'} is not the id of the key it carries")
            key = key or carried_key
        if key is None:
            # pv writes the key with every signature: one that neither carries it nor names a trusted
            # key cannot be checked by anyone, so it is never taken as "unsigned"
            return EnvelopeCheck(
                "tampered",
                why=f"the signature of key {kid[:16] or '?'} carries no public key and names no trusted key: "
                "it cannot be checked",
            )
        try:
            key.verify(raw_sig, message)
        except InvalidSignature:
            return EnvelopeCheck(
                "tampered", why=f"the signature of key {kid[:16]} does not verify against the statement"
            )
        if ring is not None and kid in ring.keys:
            trusted = trusted or kid
        else:
            others.append(kid[:16])
    if trusted is not None:
        return EnvelopeCheck("trusted", trusted)
    if ring is None:
        return EnvelopeCheck("unchecked", why="signed by " + ", ".join(others))
    return EnvelopeCheck("untrusted", why="signed only by keys that are not trusted: " + ", ".join(others))
