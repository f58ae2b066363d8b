"""Digests and deterministic JSON: what binds evidence to a contract and detects tampering.

A contract's *binding digest* is the sha256 of a canonical JSON form of its parsed YAML with
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

import yaml

BINDING_METHOD = "pv-canonical-v1"
_CHUNK = 1 << 20

try:  # libyaml when present: contracts are parsed on every verify
    _SafeLoader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _SafeLoader = yaml.SafeLoader


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def jsonable(value: Any) -> Any:
    """Plain JSON data from checker output: non-finite floats and array scalars included.

    JSON has no NaN or infinity; a NaN loss is exactly what evidence must be able to show, so
    it is written as the string ``"nan"`` rather than dropped or emitted as invalid JSON.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
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


def load_yaml(data: bytes) -> Any:
    return yaml.load(data, Loader=_SafeLoader)


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
            meta["changelog"] = [e for e in log if not (isinstance(e, dict) and "evidence" in e)]
        out["metadata"] = meta
    return out


def contract_binding_digest(contract_bytes: bytes) -> str:
    """sha256 of the canonical form; raises ``yaml.YAMLError`` on unparsable bytes."""
    canonical = json.dumps(
        jsonable(binding_form(load_yaml(contract_bytes))), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return sha256_bytes(canonical.encode())
