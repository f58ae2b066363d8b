"""What the evaluator does past the parser's whitelist: a conditional takes the branch its test
picks; an operator on a non-number and a value that cannot enter an expression are refused with the
operands' types and the column of the part at fault; and a tree the evaluator does not know, or one
too deep for the stack it is evaluated on, is an :class:`EvalError` that says so, not a crash."""

from __future__ import annotations

import ast
import sys
import traceback

import pytest

from pv.expr import EvalError, Expression, parse


@pytest.mark.parametrize(("x", "expected"), [(1, "body"), (-1, "orelse")])
def test_a_conditional_takes_the_branch_its_test_picks(x: int, expected: str) -> None:
    assert parse("'body' if x > 0 else 'orelse'").evaluate({"x": x}) == expected


def test_an_operator_on_a_non_number_names_both_types_and_its_column() -> None:
    with pytest.raises(EvalError) as info:
        parse("0 < x + [1, 2]").evaluate({"x": "a"})
    assert info.value.message == "+ needs numbers, got str and tuple"
    assert info.value.col == 5


def test_a_value_that_cannot_enter_an_expression_is_named_at_its_column() -> None:
    with pytest.raises(EvalError) as info:
        parse("0 < x").evaluate({"x": None})
    assert info.value.message == "x: value is None"
    assert info.value.col == 5


def test_a_tree_the_evaluator_does_not_know_is_refused_by_name() -> None:
    # an Expression built by hand around a tree parse() never checked
    tree = ast.parse("0 < x.real", mode="eval")
    expression = Expression(text="0 < x.real", tree=tree, names=frozenset({"x"}))
    with pytest.raises(EvalError) as info:
        expression.evaluate({"x": 1})
    assert info.value.message == "Attribute is not allowed in an expression"
    assert info.value.col == 5


def test_an_expression_too_deep_for_the_stack_is_an_error_not_a_crash() -> None:
    text = "-" * 60 + "x < 0"  # 60 nested negations: within parse()'s depth limit
    expression = parse(text)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(traceback.extract_stack()) + 40)  # a stack already nearly used up
    try:
        with pytest.raises(EvalError) as info:
            expression.evaluate({"x": 1})
    finally:
        sys.setrecursionlimit(limit)
    assert info.value.message == "the expression is too deeply nested"
