"""What an ``expect``'s string literals hold is what the contract wrote: a tab (YAML's ``\\t`` in a
double-quoted scalar) stays a tab, and a line break inside a literal, which parsing would read as
a blank, is refused with its column and the fix; line breaks between the parts of an expression,
implicit concatenation included, stay blanks.  Also: where parse points when Python's parser gives
up, and at which of two NUL characters."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

import pv.expr as expr_module
from pv.expr import ExprError, parse

BROKEN = "a string literal holds a line break; write it as \\n"


def _refusal(text: str) -> tuple[str, int, str]:
    with pytest.raises(ExprError) as info:
        parse(text)
    return info.value.message, info.value.col, info.value.text


@pytest.mark.parametrize("text", ["x == 'a\tb'", 'x == "a\tb"', "x == '''a\tb'''"])
def test_a_tab_in_a_literal_is_the_tab(text: str) -> None:
    expr = parse(text)
    assert expr.evaluate({"x": "a\tb"}) is True and expr.evaluate({"x": "a b"}) is False


@pytest.mark.parametrize(
    ("text", "col"),
    [
        ("x == 'a\nb'", 6),
        ("x == '''a\nb'''", 6),
        ("x == 'a\rb'", 6),
        ("x == 'a\r\nb'", 6),
        ("x == 'ab' and\n y == 'c\nd'", 21),
        ("  x ==\n 'é\nb'", 9),
        ("é == 'ok' and x == 'a\nb'", 20),
    ],
)
def test_a_line_break_inside_a_literal_is_refused_where_the_literal_starts(text: str, col: int) -> None:
    assert _refusal(text) == (BROKEN, col, text)


@pytest.mark.parametrize(
    ("text", "holds"),
    [("x in ('ab'\n 'cd')", "abcd"), ("x ==\n'ab'", "ab"), ("x\r\n== 'ab'", "ab")],
)
def test_line_breaks_between_the_parts_stay_blanks(text: str, holds: str) -> None:
    assert parse(text).evaluate({"x": holds}) is True


@pytest.mark.parametrize("error", [RecursionError, MemoryError])
def test_a_parser_that_gives_up_is_named_at_the_start(monkeypatch: pytest.MonkeyPatch, error: type) -> None:
    def gives_up(*args: object, **kwargs: object) -> ast.AST:
        raise error

    # pv's own reference to the parser only: pytest parses source with it to report a failure
    monkeypatch.setattr(expr_module, "ast", SimpleNamespace(**{**vars(ast), "parse": gives_up}))
    assert _refusal("y + x") == (f"cannot parse the expression: {error.__name__}", 1, "y + x")


def test_of_two_nul_characters_the_first_is_named() -> None:
    assert _refusal("x\0 > 1\0") == ("the expression holds a NUL character", 2, "x\0 > 1\0")
