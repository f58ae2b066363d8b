"""What a falsifier's ``expect`` says about one observation: its limit, which way is better, how much
of the limit a value uses.

Read off the comparisons of the predicate (through ``and``/``or``): ``x >= L`` (or ``L <= x``) is
a lower limit, so higher is better and a value uses ``L / x`` of it; ``x <= L`` an upper limit,
lower is better, ``x / L``.  ``L`` is any expression the falsifier's params evaluate.  An
observation compared in another shape (``abs(x - y) <= t``, ``x == 3``) has no direction: its
change is shown, and only its verdict classifies it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pv.expr import ExprError, parse

Direction = Literal["higher", "lower"]
_LOWER_LIMIT = (ast.Gt, ast.GtE)  # `x > L`: the limit is below x
_UPPER_LIMIT = (ast.Lt, ast.LtE)


@dataclass(frozen=True)
class Limit:
    name: str
    limit: float
    better: Direction

    def used(self, value: float) -> float | None:
        """The share of the limit ``value`` uses: 1.0 at the limit, above 1.0 past it."""
        if self.better == "lower":
            return value / self.limit if self.limit else None
        return self.limit / value if value else None


def _number(text: str, env: Mapping[str, Any]) -> float | None:
    try:
        value = parse(text).evaluate(env)
    except (ExprError, SyntaxError, TypeError, ValueError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def limit_of(expect: str | None, name: str, params: Mapping[str, Any]) -> Limit | None:
    """The first comparison of ``name`` alone against a term ``params`` evaluate, as a :class:`Limit`."""
    if not expect:
        return None
    try:
        tree = ast.parse(expect.strip(), mode="eval")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(left, ast.Name) and left.id == name:
            other, below = right, isinstance(op, _LOWER_LIMIT)
        elif isinstance(right, ast.Name) and right.id == name:
            other, below = left, isinstance(op, _UPPER_LIMIT)
        else:
            continue
        if not isinstance(op, _LOWER_LIMIT + _UPPER_LIMIT):
            continue
        limit = _number(ast.unparse(other), params)
        if limit is not None:
            return Limit(name, limit, "higher" if below else "lower")
    return None
