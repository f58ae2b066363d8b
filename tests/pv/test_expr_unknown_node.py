"""A kind of expression node pv does not know (one a newer Python adds, as 3.14's template strings)
is refused by its own kind's name, at its column, with the text: the whitelist names what it
allows, so an unknown kind is never let through.  No parsed text reaches one on this Python (the
kinds left, a slice and an f-string's field, sit inside nodes refused first), so the check is
handed one from a parsed tree."""

from __future__ import annotations

import ast

import pytest

from pv.expr import ExprError, _check


def test_a_node_kind_pv_does_not_know_is_refused_by_its_name() -> None:
    text = "y + x[1:2]"
    tree = ast.parse(text, mode="eval")
    assert isinstance(tree.body, ast.BinOp) and isinstance(tree.body.right, ast.Subscript)
    piece = tree.body.right.slice
    assert isinstance(piece, ast.Slice)
    with pytest.raises(ExprError) as info:
        _check(text, piece, set(), set(), 0)
    assert (info.value.message, info.value.col, info.value.text) == (
        "Slice is not allowed in an expression",
        text.index("1:2") + 1,
        text,
    )
