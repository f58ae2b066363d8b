"""What the evaluator does past the parser's whitelist: a conditional takes the branch its test
picks; an operator on a non-number and a value that cannot enter an expression are refused with the
operands' types and the column of the part at fault; and a tree the evaluator does not know is an
:class:`EvalError` that names it, not a crash (one too deep for the stack: test_expr_nesting_column)."""

from __future__ import annotations

import ast

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
