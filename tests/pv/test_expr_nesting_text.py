"""An expression refused for nesting too deep carries its text, as every other refusal does, so
``pv validate`` can print it under the caret."""

from __future__ import annotations

import pytest

from pv.expr import MAX_DEPTH, ExprError, parse


def test_a_refusal_for_depth_carries_the_text() -> None:
    text = "y + " + "-" * (MAX_DEPTH + 1) + "x"
    with pytest.raises(ExprError) as info:
        parse(text)
    assert info.value.message == f"the expression nests deeper than {MAX_DEPTH} levels"
    assert info.value.text == text
