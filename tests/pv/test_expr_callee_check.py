"""A call through something that is not a function's name is refused as such, after its callee is
checked on its own: a callee that reads a name or calls a function is still refused for the call,
and a callee's nesting counts one level below the call, as any operand's does."""

from __future__ import annotations

import pytest

from pv.expr import MAX_DEPTH, ExprError, parse

NOT_A_NAME = "only the whitelisted functions can be called"


def _message(text: str) -> str:
    with pytest.raises(ExprError) as info:
        parse(text)
    return info.value.message


@pytest.mark.parametrize("text", ["(y + 1)(2)", "abs(x)(2)", "(max(a, b) * c)(2)"])
def test_a_callee_that_reads_names_or_calls_is_refused_for_the_call(text: str) -> None:
    assert _message(text) == NOT_A_NAME


def test_a_callee_s_nesting_counts_from_one_below_the_call() -> None:
    # the call is level 0 and its callee level 1: k unary minuses put the name at level k + 1
    deepest = MAX_DEPTH - 1
    assert _message("(" + "-" * deepest + "x)(2)") == NOT_A_NAME
    assert _message("(" + "-" * (deepest + 1) + "x)(2)") == f"the expression nests deeper than {MAX_DEPTH} levels"
