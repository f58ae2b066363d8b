"""Digests and deterministic JSON: what binds evidence to a contract and detects tampering.

A contract's *binding digest* is the sha256 of a canonical JSON form of its parsed YAML (read by
:mod:`pv.loader`, the same YAML 1.2 rules, alias and size caps the run uses) with
``metadata.status`` and every changelog entry that carries an ``evidence`` field removed.  Those
are exactly the two things ``pv promote`` writes, so promoting a contract from a bundle does not
make that bundle stale, while any edit to a claim (a bound, a param, a falsifier, the version)
does.  Comments and formatting are not part of the binding: the exact-bytes sha256 is recorded
beside it for audit.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from pv.loader import LoadedContract, load_contract_bytes

# v1 parsed with PyYAML's YAML 1.1 rules, so `014` digested as 12 while the run read 14; v2 reads
# the contract through pv.loader, the parser the run itself uses.
BINDING_METHOD = "pv-canonical-v2"


class ContractUnreadable(ValueError):
    """The contract bytes do not parse (or are refused by the loader's caps): nothing to bind to."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()  # read in chunks, never whole


def holds_utf8(text: str) -> bool:
    """Whether UTF-8 can hold ``text``: not if it has lone surrogates, which is how a file name
    whose bytes did not decode comes (``os.fsdecode``)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 can hold it (:func:`holds_utf8`): each undecoded byte of a file name
    written ``\\xNN``, any other lone surrogate ``\\uNNNN``, so the evidence of a run that met one is
    still written."""
    if holds_utf8(text):
        return text
    return "".join(_escaped(c) if "\ud800" <= c <= "\udfff" else c for c in text)


def _escaped(surrogate: str) -> str:
    code = ord(surrogate)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def jsonable(value: Any) -> Any:
    """Plain JSON data from checker output: non-finite floats, array scalars and text that UTF-8
    cannot hold (:func:`utf8_text`) included.

    JSON has no NaN or infinity; a NaN loss is exactly what evidence must be able to show, so
    it is written as the string ``"nan"`` rather than dropped or emitted as invalid JSON.
    """
    if isinstance(value, str):
        return utf8_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # "nan", "inf" or "-inf"
    if isinstance(value, dict):
        return {utf8_text(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, Path):
        return value.as_posix()
    if hasattr(value, "tolist"):  # numpy / torch scalars and arrays, without importing them
        return jsonable(value.tolist())
    if hasattr(value, "item"):
        return jsonable(value.item())
    return str(value)


def dumps(data: Any) -> str:
    """Sorted, indented JSON with a trailing newline: byte-stable for equal data."""
    return json.dumps(jsonable(data), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def read_contract(data: bytes, path: str | Path = "<contract>", dialect: str = "pv") -> LoadedContract:
    """The one way evidence code reads a contract: pv's loader over exactly these bytes."""
    return load_contract_bytes(data, path, dialect=dialect)


def first_error(loaded: LoadedContract) -> str:
    """The loader's first error, as verify and promote report why a contract does not load."""
    first = next((d for d in loaded.diagnostics if d.is_error), None)
    return f"{first.code} {first.message}" if first else "the contract does not parse"


def contract_data(data: bytes, path: str | Path = "<contract>") -> dict[str, Any]:
    """Parsed contract data; raises :class:`ContractUnreadable` with the loader's first error."""
    loaded = read_contract(data, path)
    if loaded.data is None:
        raise ContractUnreadable(first_error(loaded))
    return loaded.data


def declared_falsifiers(data: Any) -> list[dict[str, Any]]:
    """The falsifier entries of parsed contract data that carry an id, in order: the one reading
    the writer, the code binding and the status share."""
    tests = data.get("falsification_tests") if isinstance(data, dict) else None
    return [t for t in tests if isinstance(t, dict) and isinstance(t.get("id"), str)] if isinstance(tests, list) else []


def binding_form(data: Any) -> Any:
    """The parsed contract without the fields ``pv promote`` owns."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k != "status"}
        log = meta.get("changelog")
        if isinstance(log, list):
            kept = [e for e in log if not (isinstance(e, dict) and "evidence" in e)]
            if kept:
                meta["changelog"] = kept
            else:
                # `pv promote` writes the changelog a contract may lack: none, an empty one and one
                # holding only promotion entries bind the evidence alike
                del meta["changelog"]
        elif log is None and "changelog" in meta:
            del meta["changelog"]
        out["metadata"] = meta
    return out


def binding_digest_of(data: Any) -> str:
    """sha256 of the canonical form of already-parsed contract data."""
    try:
        canonical = json.dumps(
            jsonable(binding_form(data)), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except ValueError as exc:  # e.g. an integer past Python's digit limit
        raise ContractUnreadable(f"the contract cannot be put in canonical form: {exc}") from None
    return sha256_bytes(canonical.encode())


def contract_binding_digest(contract_bytes: bytes, path: str | Path = "<contract>") -> str:
    """sha256 of the canonical form; raises :class:`ContractUnreadable` on bytes that do not load."""
    return binding_digest_of(contract_data(contract_bytes, path))
