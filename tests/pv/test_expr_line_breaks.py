"""An ``expect`` from a YAML block may hold CR, LF and tab characters, a file written on Windows
CRLF: each is a blank that keeps every column where it was, whether the expression parses or not."""

from __future__ import annotations

import pytest

from pv.expr import ExprError, parse


@pytest.mark.parametrize("text", ["x\r\n> 1", "x >\r1", "x\t>\t1", "\r\n\tx > 1\r\n"])
def test_line_breaks_and_tabs_are_blanks(text: str) -> None:
    assert parse(text).names == frozenset({"x"})


@pytest.mark.parametrize(("text", "col"), [("x\r+* 2", 4), ("\r\n\tx +* 2", 7), ("x\r\n\t+* 2", 6)])
def test_each_line_break_or_tab_is_one_column(text: str, col: int) -> None:
    with pytest.raises(ExprError) as info:
        parse(text)
    assert info.value.col == col
