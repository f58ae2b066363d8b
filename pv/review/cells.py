"""How one value, verdict or mutant is written in a review, the same in Markdown and in HTML."""

from __future__ import annotations

from collections.abc import Sequence

from pv.expr import format_value
from pv.review.compare import SIGNIFICANT, Review, Row, Value

_BARS = "▁▂▃▄▅▆▇█"
ICON = {"survived": "✅", "falsified": "❌", "error": "💥", "skipped": "⏭️", "inconclusive": "❔", "not_run": "·"}


def sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return _BARS[3] * len(values)
    return "".join(_BARS[round((v - low) / (high - low) * (len(_BARS) - 1))] for v in values)


def num(value: float | str | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    text = format_value(value, digits=SIGNIFICANT)
    return f"+{text}" if signed and value > 0 else text


def pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value * 100:+.1f} %" if signed else f"{value * 100:.0f} %"


def bound(v: Value) -> str:
    if v.limit is None:
        return ""
    return f"{'≥' if v.better == 'higher' else '≤'} {num(v.limit)}"


def noise(v: Value) -> str:
    if v.within_noise is None:
        return ""
    shown = v.head_interval or v.base_interval
    interval = f" [{num(shown[0])}, {num(shown[1])}]" if shown else ""
    return ("within noise" if v.within_noise else "beyond noise") + interval


def history(row: Row, v: Value) -> str:
    values = [p.values[v.name] for p in row.history if v.name in p.values]
    line = sparkline([*values, v.head] if isinstance(v.head, float) else values)
    return f"`{line}`" if line else ""


def verdict(row: Row, icons: bool = True) -> str:
    before, after = row.base_verdict or "—", row.head_verdict or "not run"
    key = row.head_verdict or "not_run"
    icon = f"{ICON[key]} " if icons and key in ICON else ""
    return f"{icon}{after}" if before == after else f"{before} → {icon}**{after}**"


def mutant(row: Row) -> str:
    def one(caught: bool | None) -> str:
        return "—" if caught is None else ("caught" if caught else "**not caught**")

    if row.base_mutant == row.head_mutant:
        return one(row.head_mutant)
    return f"{one(row.base_mutant)} → {one(row.head_mutant)}"


MAX_VALUES = 4  # observations per falsifier in the comment; the HTML report has every one


def still_failing(review: Review) -> list[Row]:
    """Claims that fail at the head without having changed class (failing at the base too, or no base)."""
    return [r for r in review.rows if r.kind in ("unchanged", "missing") and r.head_verdict in ("falsified", "error")]


def sections(review: Review) -> list[tuple[str, list[Row]]]:
    """What the Markdown and the HTML show, in order, each section with its rows (empty ones left out):
    the changes, then what still fails, what is missing and the bounds that moved on other rows."""
    failing = still_failing(review)
    moved = [r for r in review.bounds_moved() if r.kind in ("unchanged", "missing") and r not in failing]
    kind = {k: [r for r in review.rows if r.kind == k] for k in ("regressed", "improved", "new", "missing")}
    found = [
        ("Regressed", kind["regressed"]),
        ("Improved", kind["improved"]),
        ("New", kind["new"]),
        ("Still failing", failing),
        ("Missing", kind["missing"]),
        ("Bounds moved", moved),
    ]
    return [(title, rows) for title, rows in found if rows]


def shown_values(row: Row) -> list[Value]:
    """The observations worth a reviewer's line: those that moved (then those with a bound), else the
    first with a bound, else the first."""
    moved = [
        v for v in row.values if v.moved or v.delta not in (None, 0.0) or (v.base is not None and v.base != v.head)
    ]
    if row.bound_moved:
        moved += [v for v in row.values if v.limit is not None and v not in moved]
    if moved:
        return moved[:MAX_VALUES]
    bounded = [v for v in row.values if v.limit is not None]
    return (bounded or row.values)[:1]
