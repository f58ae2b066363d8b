"""Where pv finds its signing key (a path given, PV_SIGNING_KEY's PEM text, PV_SIGNING_KEY_FILE's
file, else none: unsigned), and each refusal naming the source it read."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pv.bundle.signing import SIGNING_KEY_ENV, SIGNING_KEY_FILE_ENV, Signer, SigningError


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Signer, Path]:
    monkeypatch.delenv(SIGNING_KEY_ENV, raising=False)
    monkeypatch.delenv(SIGNING_KEY_FILE_ENV, raising=False)
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "signing.pem"
    path.write_bytes(_pem(key))
    return Signer(key), path


def test_each_source_of_the_signing_key_gives_that_key(
    keys: tuple[Signer, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    signer, path = keys
    assert Signer.from_environment() is None  # nothing set: unsigned
    given = Signer.from_environment(path)
    assert given is not None and given.key_id == signer.key_id
    monkeypatch.setenv(SIGNING_KEY_FILE_ENV, f"  {path}  ")
    from_file = Signer.from_environment()
    assert from_file is not None and from_file.key_id == signer.key_id
    other = Ed25519PrivateKey.generate()
    monkeypatch.setenv(SIGNING_KEY_ENV, "\n" + _pem(other).decode() + "\n")  # the text wins over the file
    from_text = Signer.from_environment()
    assert from_text is not None and from_text.key_id == Signer(other).key_id


def test_a_bad_key_is_refused_naming_where_it_came_from(
    keys: tuple[Signer, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(SigningError, match=f"^{bad}: not a PEM private key without a password: "):
        Signer.from_environment(bad)
    monkeypatch.setenv(SIGNING_KEY_FILE_ENV, str(bad))
    with pytest.raises(SigningError, match=f"^{bad}: not a PEM private key without a password: "):
        Signer.from_environment()
    monkeypatch.setenv(SIGNING_KEY_ENV, "not a key either")
    with pytest.raises(SigningError, match=r"^\$PV_SIGNING_KEY: not a PEM private key without a password: "):
        Signer.from_environment()
