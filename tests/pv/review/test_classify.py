"""How the review classes one falsifier, base against head: every branch of the rule, with the
reason the comment prints.  The class decides the check run's conclusion, so each is pinned."""

from __future__ import annotations

from typing import Any

import pytest

from pv.review.compare import Row, Value, _classify


def _row(
    values: list[Value] | None = None,
    *,
    changed: list[str] | None = None,
    mutants: tuple[bool | None, bool | None] = (None, None),
) -> Row:
    return Row(
        "demo-v1", "contracts/demo-v1.yaml", "FALSIFY-1", True, 3, "unchanged", "",
        None, None, mutants[0], mutants[1], None, None, False, changed or [], values or [],
    )  # fmt: skip


def _value(moved: str = "", within_noise: bool | None = None, name: str = "x") -> Value:
    return Value(name, 1.0, 2.0, moved=moved, within_noise=within_noise)


def classed(
    row: Row, base: dict[str, Any] | None, head: dict[str, Any] | None, base_known: bool = True
) -> tuple[str, str]:
    _classify(row, base, head, base_known)
    return row.kind, row.why


S, F, E, INC, K, N = ({"verdict": v} for v in ("survived", "falsified", "error", "inconclusive", "skipped", "not_run"))


@pytest.mark.parametrize(
    ("base", "head", "changed", "expected"),
    [
        (None, S, [], ("missing", "no base: no run of the base's code decided it")),
        (None, INC, [], ("missing", "no base: no run of the base's code decided it")),
        (None, K, [], ("missing", "no base: no run of the base's code decided it")),
        (None, N, ["checker"], ("missing", "no base: no run of the base's code decided it")),
        (None, N, [], ("unchanged", "run neither at the base nor at the head")),
        (None, None, [], ("unchanged", "run neither at the base nor at the head")),
        (S, N, ["checker"], ("missing", "changed here and not measured in this run")),
        (S, None, [], ("unchanged", "not touched by the change; not run")),
        (S, F, [], ("regressed", "survived → falsified")),
        (S, E, [], ("regressed", "survived → error")),
        (INC, F, [], ("regressed", "inconclusive → falsified")),
        (K, E, [], ("regressed", "skipped → error")),
        (F, S, [], ("improved", "falsified → survived")),
        (E, INC, [], ("improved", "error → inconclusive")),
        (F, K, [], ("improved", "falsified → skipped")),
        (F, E, [], ("unchanged", "same")),  # failing at both: the same rank
        (S, INC, [], ("unchanged", "same")),  # a change of rank with no failure on either side
        (INC, S, [], ("unchanged", "same")),
        ({"verdict": "odd"}, F, [], ("regressed", "odd → falsified")),  # an unknown verdict ranks as undecided
        (F, {"verdict": "survived"}, [], ("improved", "falsified → survived")),
    ],
)
def test_verdicts(
    base: dict[str, Any] | None, head: dict[str, Any] | None, changed: list[str], expected: tuple[str, str]
) -> None:
    assert classed(_row(changed=changed), base, head) == expected


def test_a_falsifier_the_base_contract_lacks_is_new() -> None:
    assert classed(_row(), S, S, base_known=False) == ("new", "not in the base's contract")


@pytest.mark.parametrize(
    ("mutants", "expected"),
    [
        ((True, False), ("regressed", "its mutant is no longer caught")),
        ((False, True), ("improved", "its mutant is caught now")),
        ((True, True), ("unchanged", "same")),
        ((False, False), ("unchanged", "same")),
        ((None, False), ("unchanged", "same")),
        ((True, None), ("unchanged", "same")),
        ((None, True), ("unchanged", "same")),
        ((False, None), ("unchanged", "same")),
    ],
)
def test_mutants(mutants: tuple[bool | None, bool | None], expected: tuple[str, str]) -> None:
    assert classed(_row(mutants=mutants), S, S) == expected


def test_a_verdict_change_outranks_the_mutant() -> None:
    assert classed(_row(mutants=(False, True)), S, F) == ("regressed", "survived → falsified")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            [_value("worse", name="a"), _value("worse", name="b")],
            ("regressed", "a, b moved toward the bound beyond the noise"),
        ),
        (
            [_value("better", name="a"), _value("better", name="c")],
            ("improved", "a, c moved away from the bound beyond the noise"),
        ),
        (
            [_value("better", name="a"), _value("worse", name="b")],
            ("regressed", "b moved toward the bound beyond the noise"),
        ),
        ([_value("", True), _value("", False)], ("unchanged", "within the noise")),
        ([_value("", False), _value("", None)], ("unchanged", "same")),
        ([], ("unchanged", "same")),
    ],
)
def test_values(values: list[Value], expected: tuple[str, str]) -> None:
    assert classed(_row(values), S, S) == expected


def test_a_mutant_change_outranks_the_values() -> None:
    assert classed(_row([_value("better")], mutants=(True, False)), S, S) == (
        "regressed",
        "its mutant is no longer caught",
    )
