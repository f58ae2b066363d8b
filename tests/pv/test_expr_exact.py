"""The expression language to the letter: each function's result at its edges, each error's message
and column, and which observation a verdict is said to rest on.  A user reads these in a failure:
a wrong column, a message naming the wrong function, or the wrong observation blamed is a defect."""

from __future__ import annotations

import math
import statistics

import pytest

from pv.expr import MAX_INT_BITS, EvalError, ExprError, UnknownName, parse


def _fails(text: str, env: dict[str, object]) -> EvalError:
    with pytest.raises(EvalError) as caught:
        parse(text).evaluate(env)
    return caught.value


@pytest.mark.parametrize(
    ("text", "env", "message", "col"),
    [
        ("all(x)", {"x": 3}, "TypeError: all() of a int", 1),
        ("any(x)", {"x": 2.5}, "TypeError: any() of a float", 1),
        ("len(x)", {"x": 3}, "TypeError: len() of a int", 1),
        ("sum(x)", {"x": 3}, "TypeError: sum() of a int", 1),
        ("1 + sum(x)", {"x": (1, "a")}, "TypeError: sum() of a sequence that holds non-numbers", 5),
        ("max(x)", {"x": ()}, "TypeError: max() of one argument needs a non-empty sequence", 1),
        ("min(x)", {"x": 4}, "TypeError: min() of one argument needs a non-empty sequence", 1),
        ("median(x)", {"x": ()}, "TypeError: median() needs a sequence of at least 1 number", 1),
        ("median(x)", {"x": (1, "a")}, "TypeError: median() of a sequence that holds non-numbers", 1),
        ("stdev(x)", {"x": (1.0,)}, "TypeError: stdev() needs a sequence of at least 2 numbers", 1),
        ("sem(x)", {"x": (1.0,)}, "TypeError: sem() needs a sequence of at least 2 numbers", 1),
        ("quantile(x, 0.5)", {"x": (1, "a")}, "TypeError: quantile() of a sequence that holds non-numbers", 1),
        ("quantile(x, q)", {"x": (1, 2), "q": True}, "TypeError: quantile(xs, q) needs 0 <= q <= 1", 1),
        ("quantile(x, q)", {"x": (1, 2), "q": 1.5}, "TypeError: quantile(xs, q) needs 0 <= q <= 1", 1),
        ("1 + -x", {"x": "s"}, "a number is needed here, got str", 5),
        ("1 + (-8) ** 0.5", {}, "-8 ** 0.5 is not a real number", 5),
        ("  1 + y", {}, "name 'y' is not defined (not an observation, param or constant)", 7),
    ],
)
def test_errors_name_the_function_the_type_and_the_column(
    text: str, env: dict[str, object], message: str, col: int
) -> None:
    err = _fails(text, env)
    assert (err.message, err.col, err.text) == (message, col, text)
    assert err.args == (message,) and str(err) == f"{message} (column {col})"


def test_an_unknown_name_is_named() -> None:
    err = _fails("x + y", {"x": 1})
    assert isinstance(err, UnknownName) and err.name == "y" and err.col == 5 and err.text == "x + y"


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("min(x)", {"x": (3, 1, 2)}, 1),
        ("max(x)", {"x": (3, 1, 2)}, 3),
        ("max(a, b)", {"a": 3, "b": 7}, 7),
        ("median(x)", {"x": (5, 1, 3)}, 3.0),
        ("quantile(x, 0.75)", {"x": (4, 1, 3, 2)}, 3.25),
        ("quantile(x, 0.9)", {"x": (1, 2, 3)}, 2.8),
        ("quantile(x, 0)", {"x": (2, 1)}, 1.0),
        ("quantile(x, 1)", {"x": (2, 1)}, 2.0),
        ("sem(x)", {"x": (1.0, 2.0, 4.0)}, statistics.stdev([1.0, 2.0, 4.0]) / math.sqrt(3)),
        ("sem(x)", {"x": (1.0, 3.0)}, 1.0),
        ("sum(x)", {"x": (0.1, 0.2, 0.3)}, 0.6),
    ],
)
def test_functions_at_their_edges(text: str, env: dict[str, object], expected: float) -> None:
    assert parse(text).evaluate(env) == pytest.approx(expected, rel=1e-12)


def test_the_sum_of_nothing_is_the_integer_zero() -> None:
    assert repr(parse("sum(x)").evaluate({"x": ()})) == "0"


def test_integer_powers_are_capped_at_exactly_the_limit() -> None:
    assert parse(f"2 ** {MAX_INT_BITS}").evaluate({}) == 2**MAX_INT_BITS  # exactly at the cap: allowed
    for text in (f"2 ** {MAX_INT_BITS + 1}", f"4 ** {MAX_INT_BITS // 2 + 1}", f"x + 3 ** {MAX_INT_BITS}"):
        err = _fails(text, {"x": 1})
        assert "is too large" in err.message and f"over {MAX_INT_BITS} bits" in err.message
        assert err.col == (5 if text.startswith("x") else 1), text


# --- which observation a verdict rests on ------------------------------------------------------


def _decides(text: str, env: dict[str, object], candidates: set[str] | None = None) -> str | None:
    return parse(text).deciding_name(env, candidates if candidates is not None else set(env))


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        # the comparison nearest its bound decides a predicate that holds
        ("a < 10 and c < 100", {"a": 9.5, "c": 50}, "a"),
        ("10 > a and c < 100", {"a": 9.5, "c": 50}, "a"),  # the name on the right of the bound
        ("a > 2 and c < 10", {"a": 4, "c": 3}, "a"),  # relative to the larger of the two: 2/4, not 2/2
        ("a < 2 and c > 1", {"a": 1, "c": 3}, "a"),  # 1/2, not 1/1
        ("a <= 0 and c < 10", {"a": 0, "c": 3}, "a"),  # a zero bound reached exactly: margin 0
        ("a < 10 and c < 10", {"a": 5, "c": 5}, "a"),  # a tie: the first in the text
        ("b == 2 < a and c < 10", {"b": 2, "a": 2.1, "c": 5}, "a"),  # past an equality in a chain
        ("b < 100 and 1 < 2 and a < 10", {"b": 1, "a": 9.9}, "a"),  # past a clause with no observation
        ("flag < 2 and c < 10", {"flag": True, "c": 1}, "c"),  # a boolean has no margin
        ("a < 10 and c < 100", {"a": -math.inf, "c": 50}, "c"),  # nor an infinite value
        # the first false clause decides a predicate that fails, by its first name in the text
        ("c < 10 and b < a + b", {"a": -1, "b": 0, "c": 1}, "b"),
        # with no margin anywhere, the first observation in the text
        ("b == 1 and a == 2", {"a": 2, "b": 1}, "b"),
    ],
)
def test_the_deciding_observation(text: str, env: dict[str, object], expected: str) -> None:
    assert _decides(text, env) == expected


def test_a_clause_that_cannot_be_evaluated_is_passed_over() -> None:
    # zz is a declared observation that was not measured: its clause decides nothing
    assert _decides("zz < 1 and a < 10", {"a": 9.9}, {"zz", "a"}) == "a"


def test_no_observation_named_decides_nothing() -> None:
    assert _decides("1 < 2", {}, set()) is None


def test_expr_error_defaults() -> None:
    err = ExprError("bad")
    assert (err.col, err.text, str(err)) == (1, "", "bad (column 1)")


def test_the_first_name_is_found_by_position_not_as_a_substring() -> None:
    # "a" occurs inside "rate" before the failing clause; the failing clause names "b" first
    assert _decides("rate < 10 and b < a + b", {"rate": 1, "a": -1, "b": 0}) == "b"
    assert _decides("rate == 1 and a == 2", {"rate": 1, "a": 2}) == "rate"


def test_names_in_the_order_the_text_gives_them() -> None:
    assert parse("rate > 1 and b < a + b and max(a, rate) < 9").names_in_order() == ["rate", "b", "a"]
    assert parse("  pi < x").names_in_order() == ["x"]  # constants are not names it reads
