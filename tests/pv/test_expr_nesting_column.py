"""An expression too deep for the stack it is evaluated on is an :class:`EvalError`, not a crash,
and it points at the part where the stack ran out, inside the expression, not at its first column."""

from __future__ import annotations

import sys
import traceback

import pytest

from pv.expr import EvalError, parse


def test_the_nesting_error_points_inside_the_expression() -> None:
    text = "-" * 60 + "x < 0"  # each negation one column further in
    expression = parse(text)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(traceback.extract_stack()) + 40)  # a stack already nearly used up
    try:
        with pytest.raises(EvalError) as info:
            expression.evaluate({"x": 1})
    finally:
        sys.setrecursionlimit(limit)
    assert info.value.message == "the expression is too deeply nested"
    assert 1 < info.value.col <= 61
