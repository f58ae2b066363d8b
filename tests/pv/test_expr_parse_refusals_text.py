"""Every refusal ``parse`` makes carries the text it refused (a value that is not a string, as
``str`` gives it), and a syntax error's column counts characters of the text as written: leading
blanks, a tab or a newline from a YAML block, and a non-ASCII name before the offence each count one.
After ``syntax error:`` comes Python's own word for what it met, which is not pv's to test."""

from __future__ import annotations

import pytest

from pv.expr import MAX_LENGTH, ExprError, parse


def _refusal(text: object) -> tuple[str, int, str]:
    with pytest.raises(ExprError) as info:
        parse(text)  # type: ignore[arg-type]
    return info.value.message, info.value.col, info.value.text


@pytest.mark.parametrize(("value", "shown"), [(5, "5"), (None, "None"), (b"x", "b'x'")])
def test_a_value_that_is_not_a_string_is_carried_as_str_gives_it(value: object, shown: str) -> None:
    assert _refusal(value)[1:] == (1, shown)


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        ("   ", "the expression is empty", 1),
        ("x" * (MAX_LENGTH + 1), f"the expression is {MAX_LENGTH + 1} characters long; the limit is {MAX_LENGTH}", 1),
        ("x\0y", "the expression holds a NUL character", 2),
        ("  x +* 2", "syntax error: ", 6),
        ("\tx ++* 1", "syntax error: ", 6),
        ("x\n+* y", "syntax error: ", 4),
        ("é + +* 2", "syntax error: ", 6),
        ("x = 1", "syntax error: ", 3),
        ("  (x + ", "syntax error: ", 3),
        ("  x +", "syntax error: the expression ends early", 6),
    ],
)
def test_each_refusal_carries_its_text_and_column(text: str, message: str, col: int) -> None:
    said, at, carried = _refusal(text)
    words = said[: len(message)] if message == "syntax error: " else said
    assert (words, at, carried) == (message, col, text)
