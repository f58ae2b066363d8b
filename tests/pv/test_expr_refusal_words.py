"""Each refusal of an ``expect`` expression in pv's own words, whole: a contract author reads them in
``pv validate`` and ``pv lint``, so a word lost or changed is a defect (the fragments other tests
look for survive a message padded or cut around them)."""

from __future__ import annotations

import pytest

from pv.expr import ExprError, parse

ALLOWED = (
    "abs, all, any, exp, isfinite, len, ln, log, log10, log2, max, mean, median, min, quantile, sem, sqrt, stdev, sum"
)


@pytest.mark.parametrize(
    ("text", "col", "message"),
    [
        ("x.real > 0", 1, "attribute access is not allowed"),
        ("x.f() > 1", 1, "attribute access is not allowed"),  # the real offence, before the call's
        ("xs[0] > 1", 1, "subscripts are not allowed"),
        ("open('f')", 1, f"call to 'open' is not allowed (allowed: {ALLOWED})"),
        ("(1)(2)", 1, "only the whitelisted functions can be called"),
        ("abs(x, key=1)", 8, "keyword arguments are not allowed"),
        ("x is None", 1, "'is' comparisons are not allowed; use == or !="),
        ("x == None", 6, "the literal None is not allowed"),
        ("b'x' == x", 1, "the literal b'x' is not allowed"),
        ("1j + x", 1, "the literal 1j is not allowed"),
        ("x == ...", 6, "the literal Ellipsis is not allowed"),
        ("x & 1", 1, "only + - * / // % ** are allowed"),
        ("~x", 1, "bitwise operators are not allowed"),
        ("abs", 1, "'abs' is a function; call it as abs(...)"),
        ("sqrt(1, 2)", 1, "sqrt() takes 1 argument(s), got 2"),
        ("quantile(x)", 1, "quantile() takes 2 argument(s), got 1"),
        ("log()", 1, "log() takes 1 to 2 argument(s), got 0"),
        ("max()", 1, "max() takes 1 to 64 argument(s), got 0"),
        ("   ", 1, "the expression is empty"),
        ("(" * 70 + "x" + ")" * 70 + " + " + "-" * 100 + "x", 209, "the expression nests deeper than 64 levels"),
    ],
)
def test_refused_in_these_words_at_this_column(text: str, col: int, message: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(text)
    assert (info.value.message, info.value.col) == (message, col)


@pytest.mark.parametrize(
    ("text", "names", "functions"),
    [
        ("not x", ["x"], []),
        ("-x > +y", ["x", "y"], []),
        ("x if y else z", ["x", "y", "z"], []),
        ("(x, y) == (1, 2)", ["x", "y"], []),
        ("pi * r ** 2 < area", ["area", "r"], []),  # a constant is not a measured name
        ("quantile(xs, 0.5) <= max(a, b)", ["a", "b", "xs"], ["max", "quantile"]),
        ("log(sqrt(x), 2) > 0", ["x"], ["log", "sqrt"]),
    ],
)
def test_the_names_and_functions_an_expression_uses(text: str, names: list[str], functions: list[str]) -> None:
    expr = parse(text)
    assert (sorted(expr.names), sorted(expr.functions)) == (names, functions)
