"""How one value, verdict or mutant is written in the review, to the character: the Markdown and
the HTML both print these cells, so a wrong sign or arrow misleads both."""

from __future__ import annotations

import pytest

from pv.review import cells
from pv.review.compare import Point, Value
from tests.pv.review.helpers import review, row


def test_sparklines() -> None:
    assert cells.sparkline([]) == ""
    assert cells.sparkline([2.0, 2.0, 2.0]) == "▄▄▄"
    assert cells.sparkline([0.0, 1.0, 7.0, 3.5]) == "▁▂█▅"


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [
        (None, False, "—"),
        ("n/a", True, "n/a"),
        (1.23456, False, "1.235"),
        (1.23456, True, "+1.235"),
        (-2.0, True, "-2"),
        (0.0, True, "0"),
    ],
)
def test_numbers(value: float | str | None, signed: bool, text: str) -> None:
    assert cells.num(value, signed) == text


def test_percentages_bounds_and_noise() -> None:
    assert (cells.pct(None), cells.pct(0.256), cells.pct(0.256, True), cells.pct(-0.0125, True)) == (
        "—",
        "26 %",
        "+25.6 %",
        "-1.2 %",
    )
    assert cells.bound(Value("x", 1.0, 1.0)) == ""
    assert cells.bound(Value("x", 1.0, 1.0, limit=2.5, better="higher")) == "≥ 2.5"
    assert cells.bound(Value("x", 1.0, 1.0, limit=2.5, better="lower")) == "≤ 2.5"
    assert cells.noise(Value("x", 1.0, 1.0)) == ""
    assert cells.noise(Value("x", 1.0, 1.0, within_noise=True)) == "within noise"
    both = Value("x", 1.0, 1.0, base_interval=[0.5, 1.5], head_interval=[0.25, 3.0], within_noise=False)
    assert cells.noise(both) == "beyond noise [0.25, 3]"
    base_only = Value("x", 1.0, 1.0, base_interval=[0.5, 1.5], within_noise=True)
    assert cells.noise(base_only) == "within noise [0.5, 1.5]"


def test_history_ends_with_the_head() -> None:
    r = row("F1")
    r.history = [Point(f"r{i}", None, "survived", {"loss": float(i)} if i != 2 else {}) for i in range(4)]
    assert cells.history(r, Value("loss", 1.0, 7.0)) == "`▁▂▄█`"  # 0, 1, 3, then the head
    assert cells.history(r, Value("loss", 1.0, "n/a")) == "`▁▃█`"
    assert cells.history(r, Value("other", 1.0, "n/a")) == ""


def test_verdicts_and_mutants() -> None:
    assert cells.verdict(row("F1")) == "✅ survived"
    assert cells.verdict(row("F1", head="falsified")) == "survived → ❌ **falsified**"
    assert cells.verdict(row("F1", head="falsified"), icons=False) == "survived → **falsified**"
    assert cells.verdict(row("F1", base=None)) == "— → ✅ **survived**"
    unrun = row("F1")
    unrun.head_verdict = None
    assert cells.verdict(unrun) == "survived → · **not run**"
    odd = row("F1", head="odd")
    assert cells.verdict(odd) == "survived → **odd**"
    assert cells.mutant(row("F1")) == "caught"
    assert cells.mutant(row("F1", head_mutant=False, base_mutant=False)) == "**not caught**"
    assert cells.mutant(row("F1", head_mutant=None, base_mutant=None)) == "—"
    assert cells.mutant(row("F1", head_mutant=False)) == "caught → **not caught**"
    assert cells.mutant(row("F1", base_mutant=None)) == "— → caught"


def test_sections_in_order_without_empty_ones() -> None:
    rows = [
        row("F1", "improved"),
        row("F2", "regressed"),
        row("F3", "unchanged", head="falsified"),
        row("F4", "missing"),
        row("F5", "new"),
        row("F6", "unchanged", bound_moved=True),
        row("F7", "missing", head="error"),
        row("F8", "missing", bound_moved=True),
        row("F9", "regressed", bound_moved=True),
    ]
    got = [(title, [r.falsifier_id for r in rs]) for title, rs in cells.sections(review(rows))]
    assert got == [
        ("Regressed", ["F2", "F9"]),
        ("Improved", ["F1"]),
        ("New", ["F5"]),
        ("Still failing", ["F3", "F7"]),
        ("Missing", ["F4", "F7", "F8"]),
        ("Bounds moved", ["F6", "F8"]),
    ]
    assert cells.sections(review([row("F1")])) == []


def test_the_values_worth_a_line() -> None:
    still = [Value("a", 1.0, 1.0), Value("b", 2.0, 2.0, limit=3.0), Value("c", 1.0, 1.0, limit=2.0)]
    assert [v.name for v in cells.shown_values(row("F1", values=still))] == ["b"]
    assert [v.name for v in cells.shown_values(row("F1", values=still[:1]))] == ["a"]
    moved = [Value(n, 1.0, 2.0, delta=1.0) for n in "pqrstu"]
    assert [v.name for v in cells.shown_values(row("F1", values=moved))] == ["p", "q", "r", "s"]
    mixed = [Value("a", 1.0, 1.0, moved="worse"), Value("x", "p", "q"), Value("c", 1.0, 1.0, delta=0.0)]
    mixed.append(Value("d", 1.0, 1.0, limit=2.0))
    assert [v.name for v in cells.shown_values(row("F1", values=mixed))] == ["a", "x"]
    assert [v.name for v in cells.shown_values(row("F1", values=mixed, bound_moved=True))] == ["a", "x", "d"]
    assert cells.shown_values(row("F1", values=[])) == []
