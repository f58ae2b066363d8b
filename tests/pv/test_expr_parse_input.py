"""What parse refuses before Python's parser sees the text, and where it points when the parser
runs off the end: not a string, too long by one character, a NUL inside (which the parser reports
as the end of the text), and an unfinished expression after leading blanks or before a newline."""

from __future__ import annotations

import pytest

from pv.expr import MAX_LENGTH, ExprError, parse


@pytest.mark.parametrize(("value", "kind"), [(5, "int"), (None, "NoneType"), (["x > 1"], "list")])
def test_not_a_string(value: object, kind: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(value)  # type: ignore[arg-type]
    assert (info.value.message, info.value.col) == (f"expected an expression string, got {kind}", 1)


def test_the_length_limit_is_inclusive() -> None:
    assert parse("x" * MAX_LENGTH).names == frozenset({"x" * MAX_LENGTH})
    with pytest.raises(ExprError) as info:
        parse("x" * (MAX_LENGTH + 1))
    assert info.value.message == f"the expression is {MAX_LENGTH + 1} characters long; the limit is {MAX_LENGTH}"
    assert info.value.col == 1


def test_a_nul_character_is_named_where_it_is() -> None:
    with pytest.raises(ExprError) as info:
        parse("x\0 > 1")
    assert (info.value.message, info.value.col) == ("the expression holds a NUL character", 2)


@pytest.mark.parametrize(("text", "col"), [("0 < x <=", 9), ("  0 < x <=", 11), ("x <=\n", 5), ("x > 1 and", 10)])
def test_an_unfinished_expression_points_just_past_its_end(text: str, col: int) -> None:
    with pytest.raises(ExprError) as info:
        parse(text)
    assert (info.value.message, info.value.col) == ("syntax error: the expression ends early", col)
