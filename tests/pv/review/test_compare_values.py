"""One observation, base against head, to the field: the delta, the share of the limit, the noise,
and whether it moved toward or away from its bound; the order the observations are shown in; a
falsifier's history along the base's line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pv.review.compare import Point, Value, _history, _names, compare_value
from pv.review.runs import Run


def _entry(value: Any, expect: str = "loss <= 2", interval: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    noise = {"loss": {"interval": interval}} if interval is not None else {}
    return {"observations": {"loss": value}, "expect": expect, "noise": noise, **extra}


def test_a_value_that_moved_toward_its_bound() -> None:
    got = compare_value("loss", _entry(1.0), _entry(1.5), 0.05)
    assert got == Value(
        "loss", 1.0, 1.5, delta=0.5, delta_pct=0.5, limit=2.0, better="lower", used=0.75, base_used=0.5, moved="worse"
    )


def test_a_value_that_moved_away_and_a_higher_is_better_bound() -> None:
    got = compare_value(
        "rate",
        {"observations": {"rate": 100}, "expect": "rate >= 50"},
        {"observations": {"rate": 150}, "expect": "rate >= 50"},
        0.05,
    )
    assert (got.delta, got.delta_pct, got.better, got.moved, got.limit) == (50.0, 0.5, "higher", "better", 50.0)
    down = compare_value(
        "rate",
        {"observations": {"rate": 100}, "expect": "rate >= 50"},
        {"observations": {"rate": 60}, "expect": "rate >= 50"},
        0.05,
    )
    assert down.moved == "worse" and down.delta_pct == pytest.approx(-0.4)


@pytest.mark.parametrize(
    ("base", "head", "threshold", "moved"),
    [
        (1.0, 1.04, 0.05, ""),  # within the threshold
        (1.0, 1.06, 0.05, "worse"),
        (2.0, 3.0, 0.5, ""),  # exactly at it: not beyond
        (0.0, 0.0, 0.05, ""),  # no base to be relative to, and no change
        (0.0, 0.1, 0.05, "worse"),  # any change from zero
    ],
)
def test_the_threshold_without_intervals(base: float, head: float, threshold: float, moved: str) -> None:
    got = compare_value("loss", _entry(base), _entry(head), threshold)
    assert got.moved == moved and got.within_noise is None
    assert got.delta_pct == ((head - base) / abs(base) if base else None)


@pytest.mark.parametrize(
    ("base_iv", "head_iv", "within"),
    [
        ([0.9, 1.1], [1.0, 1.6], True),  # the intervals overlap
        ([0.9, 1.1], [1.2, 1.6], False),  # head above base
        ([1.2, 1.6], [0.9, 1.1], False),  # head below base
        ([0.9, 1.1], [1.1, 1.6], True),  # touching ends overlap
        (None, [1.2, 1.6], False),  # one side alone: the other is its value
        ([0.9, 1.1], None, True),
    ],
)
def test_the_noise_decides_when_an_interval_is_known(
    base_iv: list[float] | None, head_iv: list[float] | None, within: bool
) -> None:
    head_value = 1.4 if head_iv != [0.9, 1.1] else 1.0
    base_value = 1.0 if base_iv != [1.2, 1.6] else 1.4
    if base_iv is not None and head_iv is None:
        head_value = 1.05
    got = compare_value("loss", _entry(base_value, interval=base_iv), _entry(head_value, interval=head_iv), 0.0)
    assert got.within_noise is within and (got.base_interval, got.head_interval) == (base_iv, head_iv)
    assert got.moved == ("" if within else ("worse" if head_value > base_value else "better"))


def test_values_that_are_not_numbers_and_a_missing_side() -> None:
    text = compare_value("loss", _entry("n/a"), _entry({"value": 1.25, "low": 1.0, "high": 1.5}), 0.05)
    assert (text.base, text.head, text.delta, text.moved, text.used) == ("'n/a'", 1.25, None, "", 0.625)
    only_head = compare_value("loss", None, _entry(1.5), 0.05)
    assert (only_head.base, only_head.head, only_head.base_used, only_head.used) == (None, 1.5, None, 0.75)
    only_base = compare_value("loss", _entry(1.0), None, 0.05)
    assert (only_base.head, only_base.used, only_base.base_used, only_base.limit) == (None, None, 0.5, 2.0)
    flag = compare_value("ok", {"observations": {"ok": True}}, {"observations": {"ok": False}}, 0.05)
    assert (flag.base, flag.head, flag.delta) == ("True", "False", None)
    nan = compare_value("loss", _entry(float("nan")), _entry(1.0), 0.05)
    assert nan.base == "nan" and nan.delta is None


def test_the_base_share_of_its_own_limit_when_the_bound_moved() -> None:
    got = compare_value("loss", _entry(1.0, "loss <= 4"), _entry(1.0, "loss <= 2"), 0.05)
    assert (got.limit, got.used, got.base_used) == (2.0, 0.5, 0.25)
    unparsed = compare_value("loss", _entry(1.0, "loss <="), _entry(1.0), 0.05)
    assert unparsed.base_used == 0.5  # a base expect that no longer parses: the head's limit


def test_no_limit_no_direction() -> None:
    got = compare_value("loss", _entry(1.0, "isfinite(loss)"), _entry(3.0, "isfinite(loss)"), 0.05)
    assert (got.limit, got.better, got.used, got.moved, got.delta) == (None, None, None, "", 2.0)


def test_observations_in_the_order_the_expect_names_them() -> None:
    obs = {"b": 1.0, "a": 2.0, "rate": 3.0, "label": "x"}
    assert _names({"observations": obs, "expect": "rate > 1 and b < a"}) == ["rate", "b", "a"]
    assert _names({"observations": obs, "expect": "zz > 1"}) == ["b", "a", "rate"]  # none read: every number
    assert _names({"observations": obs, "expect": "rate >"}) == ["b", "a", "rate"]  # unparsable: the same
    assert _names({"observations": obs}) == ["b", "a", "rate"]


def _run(run_id: str, commit: str | None, verdict: str | None, loss: Any = 1.0, dirty: bool = False) -> Run:
    falsifiers = {} if verdict is None else {"F1": {"verdict": verdict, "observations": {"loss": loss, "x": "s"}}}
    return Run("demo-v1", run_id, run_id, commit, dirty, None, False, "c", {}, falsifiers, "evidence")


def test_history_along_the_line() -> None:
    runs = [
        _run("r1", "a1", "survived", 1.0),
        _run("r2", "a2", "falsified", 2.0),
        _run("r3", "zz", "survived", 3.0),  # not on the line
        _run("r4", "a3", "survived", 4.0, dirty=True),  # a dirty checkout is not the commit
        _run("r5", None, "survived", 5.0),
        _run("r6", "a3", "skipped"),
        _run("r7", "a3", None),
        _run("r8", "a3", "inconclusive", float("inf")),
        _run("r9", "a3", "error", 9.0),
    ]
    line = {"a1", "a2", "a3"}
    got = _history(runs, line, "F1", ["loss", "x"], 10)
    assert got == [
        Point("r1", "a1", "survived", {"loss": 1.0}),
        Point("r2", "a2", "falsified", {"loss": 2.0}),
        Point("r8", "a3", "inconclusive", {}),
        Point("r9", "a3", "error", {"loss": 9.0}),
    ]
    assert [p.run_id for p in _history(runs, line, "F1", ["loss"], 2)] == ["r8", "r9"]
    assert _history(runs, line, "F1", ["loss"], 0) == []
    assert [p.run_id for p in _history(runs, None, "F1", ["loss"], 20)] == ["r1", "r2", "r3", "r4", "r5", "r8", "r9"]


def test_a_bound_read_from_the_params() -> None:
    head = {"observations": {"loss": 1.5}, "expect": "loss <= limit", "params": {"limit": 3.0}}
    base = {"observations": {"loss": 1.0}, "expect": "loss <= limit", "params": {"limit": 2.0}}
    got = compare_value("loss", base, head, 0.05)
    assert (got.limit, got.used, got.base_used) == (3.0, 0.5, 0.5)


def test_intervals_that_touch_from_below_overlap() -> None:
    got = compare_value("loss", _entry(1.0, interval=[0.9, 1.1]), _entry(0.8, interval=[0.5, 0.9]), 0.0)
    assert got.within_noise is True and got.moved == ""


def test_the_lines_of_each_id_and_its_mutant(tmp_path: Path) -> None:
    from pv.review.compare import id_lines

    path = tmp_path / "c.yaml"
    path.write_text(
        "metadata: {id: c-v1}\n"
        "falsification_tests:\n"
        "  - id: FALSIFY-A-001\n"
        "    mutant: m:a\n"
        "    mutant: m:again\n"
        '  - id: "FALSIFY-B-002"\n'
        "    check: x\n"
        "  -   id: 'FALSIFY-C-003'\n"
        "    mutant: m:c\n"
        "  - id: FALSIFY-A-001\n"
        "    mutant: m:later\n"
    )
    assert id_lines(path) == {"FALSIFY-A-001": (3, 4), "FALSIFY-B-002": (6, None), "FALSIFY-C-003": (8, 9)}
    assert id_lines(tmp_path / "absent.yaml") == {}
    (tmp_path / "m.yaml").write_text("mutant: before any id\n")
    assert id_lines(tmp_path / "m.yaml") == {}


def test_malformed_noise_and_mutant_entries_read_as_absent() -> None:
    from pv.review.compare import _interval, _mutant

    assert _interval({"noise": ["loss"]}, "loss") is None
    assert _interval({"noise": {"loss": {"interval": [1, 2]}}}, "loss") == [1.0, 2.0]
    assert [_mutant(e) for e in ({"mutant": "m"}, {"mutant": {"killed": "yes"}}, {"mutant": {"killed": False}})] == [
        None,
        None,
        False,
    ]


def _sides(**changed: Any) -> Any:
    from pv.review.compare import _Sides

    head = {"F1": {"verdict": "survived", "message": "first line\nsecond"}}
    return _Sides(head, {"F1": "run-h"}, {}, {}, [], changed, None, False)


def test_a_row_reads_the_entry_as_declared_and_the_change_as_found() -> None:
    from pv.review.changed import Changed
    from pv.review.compare import _row

    entry = {"id": "F1", "mutant": 5}
    change = Changed("c-v1", "contracts/c.yaml", "F1", ["code: 1 edited (x.py)"])
    row = _row(entry, "c-v1", "contracts/c.yaml", {}, _sides(F1=change))
    assert (row.line, row.mutant_line, row.mutant, row.head_expect) == (None, None, None, None)
    assert (row.changed, row.bound_moved, row.message, row.head_run) == (
        ["code: 1 edited (x.py)"],
        False,
        "first line",
        "run-h",
    )
    row = _row({"id": "F1", "mutant": "m:f", "expect": "x >= 1"}, "c-v1", "c.yaml", {"F1": (4, 9)}, _sides())
    assert (row.line, row.mutant_line, row.mutant, row.head_expect, row.changed) == (4, 9, "m:f", "x >= 1", [])


def test_ancestry_is_the_base_s_line_and_nothing_for_an_unknown_commit(tmp_path: Path) -> None:
    import subprocess

    from pv.review.compare import _ancestry

    def git(*args: str) -> str:
        cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args]
        return subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    commits = []
    for n in range(2):
        (tmp_path / "f.txt").write_text(str(n))
        git("add", "-A")
        git("commit", "-q", "-m", f"c{n}")
        commits.append(git("rev-parse", "HEAD"))
    git("checkout", "-q", "-b", "side", commits[0])
    (tmp_path / "g.txt").write_text("side")
    git("add", "-A")
    git("commit", "-q", "-m", "side")
    assert _ancestry(tmp_path, commits[1]) == set(commits)
    assert _ancestry(tmp_path, "f" * 40) == set()
