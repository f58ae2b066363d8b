"""Text that UTF-8 cannot hold becomes text it can, and nothing else changes: the bytes of a file
name that did not decode as ``\\xNN``, any other lone surrogate as ``\\uNNNN``, wherever it sits in
checker output (a value, a key, a list), so ``dumps`` always gives UTF-8."""

from __future__ import annotations

import os

import pytest

from pv.bundle.digest import dumps, jsonable, utf8_text


@pytest.mark.parametrize(
    ("text", "written"),
    [
        (os.fsdecode(b"r\xe9sultats/\x80\xff.log"), "r\\xe9sultats/\\x80\\xff.log"),
        ("a\ud800b\udbff", "a\\ud800b\\udbff"),  # high surrogates never come from bytes
        ("\udc7f\udd00\udfff", "\\udc7f\\udd00\\udfff"),  # low ones outside the bytes 0x80-0xff either
        ("é \u2028 \\xe9 😀", "é \u2028 \\xe9 😀"),  # text UTF-8 holds, a backslash included: as it is
        ("", ""),
    ],
)
def test_utf8_text(text: str, written: str) -> None:
    assert utf8_text(text) == written
    written.encode("utf-8")


def test_text_utf8_holds_is_the_same_object() -> None:
    text = "loss ≤ 0.7·ln(V)"
    assert utf8_text(text) is text


def test_jsonable_and_dumps_write_every_string_as_utf8_holds_it() -> None:
    name = os.fsdecode(b"caf\xe9")
    assert jsonable({name: [name, (name,), {name}], "n": 1}) == {
        "caf\\xe9": ["caf\\xe9", ["caf\\xe9"], ["caf\\xe9"]],
        "n": 1,
    }
    assert dumps({"file": name}) == '{\n  "file": "caf\\\\xe9"\n}\n'
