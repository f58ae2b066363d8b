"""What binds evidence to a contract, to the byte: the JSON form of checker output, the canonical
form of a contract without what `pv promote` writes, and the words when a contract cannot be read."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pv.bundle.digest import (
    ContractUnreadable,
    binding_digest_of,
    binding_form,
    contract_binding_digest,
    contract_data,
    declared_falsifiers,
    dumps,
    first_error,
    jsonable,
    sha256_bytes,
    sha256_file,
)


def test_jsonable() -> None:
    class Scalar:
        def item(self) -> float:
            return 2.5

    class Array:
        def tolist(self) -> list[float]:
            return [1.0, math.nan]

    value = {
        1: (math.nan, math.inf, -math.inf, 0.5, True, None, "s"),
        "set": {3, 1, 2},
        "when": dt.date(2026, 1, 2),
        "at": dt.datetime(2026, 1, 2, 3, 4, 5),
        "path": Path("a/b"),
        "array": Array(),
        "scalar": Scalar(),
        "other": complex(1, 2),
    }
    assert jsonable(value) == {
        "1": ["nan", "inf", "-inf", 0.5, True, None, "s"],
        "set": [1, 2, 3],
        "when": "2026-01-02",
        "at": "2026-01-02T03:04:05",
        "path": "a/b",
        "array": [1.0, "nan"],
        "scalar": 2.5,
        "other": "(1+2j)",
    }
    assert dumps({"b": 1, "a": "é"}) == '{\n  "a": "é",\n  "b": 1\n}\n'


def test_file_and_byte_digests(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = bytes(range(256)) * 9000  # more than one read of the file
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest() == sha256_bytes(data)


def test_the_binding_form_leaves_out_what_promote_writes() -> None:
    data: dict[str, Any] = {
        "metadata": {
            "id": "x-v1",
            "status": "ACTIVE",
            "changelog": [{"version": "1.0.0", "evidence": "e/1"}, {"version": "1.0.0", "change": "first"}],
        },
        "falsification_tests": [],
    }
    assert binding_form(data) == {
        "metadata": {"id": "x-v1", "changelog": [{"version": "1.0.0", "change": "first"}]},
        "falsification_tests": [],
    }
    only_promotions: dict[str, Any] = {"metadata": {"id": "x", "changelog": [{"evidence": "e/1"}]}}
    empty: dict[str, Any] = {"metadata": {"id": "x", "changelog": []}}
    none: dict[str, Any] = {"metadata": {"id": "x", "changelog": None}}
    missing: dict[str, Any] = {"metadata": {"id": "x"}}
    forms = {json.dumps(binding_form(d), sort_keys=True) for d in (only_promotions, empty, none, missing)}
    assert forms == {json.dumps({"metadata": {"id": "x"}})}  # bind alike
    assert binding_form({"metadata": {"changelog": "text"}}) == {"metadata": {"changelog": "text"}}
    assert binding_form({"metadata": "m"}) == {"metadata": "m"} and binding_form([1]) == [1]
    assert binding_form(data) is not data and data["metadata"]["status"] == "ACTIVE"  # the input is left alone


def test_binding_digests() -> None:
    text = b"metadata:\n  id: x-v1\n  version: 1.0.0\n  status: DRAFT\nfalsification_tests: []\n"
    digest = contract_binding_digest(text)
    canonical = json.dumps(binding_form(contract_data(text)), sort_keys=True, separators=(",", ":"))
    assert digest == hashlib.sha256(canonical.encode()).hexdigest() == binding_digest_of(contract_data(text))
    assert contract_binding_digest(text.replace(b"DRAFT", b"ACTIVE")) == digest  # promote's edit
    assert contract_binding_digest(text.replace(b"1.0.0", b"1.0.1")) != digest
    with pytest.raises(ContractUnreadable) as caught:
        binding_digest_of({"n": 10**5000})  # past the digits an int may be written with
    assert str(caught.value).startswith("the contract cannot be put in canonical form: ")


def test_the_words_when_a_contract_does_not_load() -> None:
    with pytest.raises(ContractUnreadable) as caught:
        contract_data(b"metadata: [1\n", "c.yaml")
    assert str(caught.value).startswith("PV")  # the loader's first error: its code, then its message
    errors = [
        SimpleNamespace(is_error=False, code="PVW1", message="w"),
        SimpleNamespace(is_error=True, code="PV101", message="bad"),
    ]
    assert first_error(SimpleNamespace(diagnostics=errors)) == "PV101 bad"  # type: ignore[arg-type]
    assert first_error(SimpleNamespace(diagnostics=errors[:1])) == "the contract does not parse"  # type: ignore[arg-type]


def test_declared_falsifiers() -> None:
    tests = [{"id": "F1"}, {"id": 2}, "F3", {"check": "x"}, {"id": "F4"}]
    assert declared_falsifiers({"falsification_tests": tests}) == [{"id": "F1"}, {"id": "F4"}]
    assert declared_falsifiers({"falsification_tests": {"id": "F1"}}) == []
    assert declared_falsifiers(None) == [] and declared_falsifiers({}) == []
