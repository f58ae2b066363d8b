"""Every refusal of an ``expect`` expression points at its offence wherever it stands, not only at
the start: the column (in characters, after a leading space or a non-ASCII name) is where the
offending part begins, and the error carries the whole text it was raised on, which ``pv validate``
and ``pv lint`` print under the caret."""

from __future__ import annotations

import pytest

from pv.expr import ExprError, parse

# (expression, the part it is refused for: the column is where that part first begins)
OFFENCES = [
    ("y + x.real", "x.real"),
    ("y + x.f()", "x.f"),
    ("y + xs[0]", "xs[0]"),
    ("y + open('f')", "open"),
    ("y + (1)(2)", "(1)(2)"),
    ("y + abs(x, key=1)", "key=1"),
    ("y < 1 and x is None", "x is"),
    ("y == None", "None"),
    ("y + b'x'", "b'x'"),
    ("y + 1j", "1j"),
    ("y + (x & 1)", "x & 1"),
    ("y + ~x", "~x"),
    ("y + abs", "abs"),
    ("y + sqrt(1, 2)", "sqrt"),
    ("y + quantile(x)", "quantile"),
    ("y + max()", "max"),
    ("y + [v for v in xs]", "[v"),
    ("y + {1: 2}", "{1"),
    ("  y + x.real", "x.real"),
    ("μ + x.real", "x.real"),
]


@pytest.mark.parametrize(("text", "part"), OFFENCES)
def test_a_refusal_points_at_its_offence_and_carries_the_text(text: str, part: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(text)
    assert (info.value.col, info.value.text) == (text.index(part) + 1, text)
