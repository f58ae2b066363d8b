"""A checker that returns, but only after its deadline (it held the interpreter past it, so the
waiting thread could not stop it in time), is a timeout that says how long it ran and why there is
no stack to show: a late result is never a pass.  One in time says how long it took."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pv import run_checker
from pv.run_checker import call_with_timeout
from tests.pv.test_run_checker_call_edges import _returns_late


def test_a_result_that_came_after_the_deadline_is_a_timeout_with_its_duration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the clock as the call reads it: the start, then 5 s later when the join returns (the
    # checker thread has ended by then, as one that held the GIL past the deadline would have)
    readings: Iterator[float] = iter([100.0, 105.0])
    monkeypatch.setattr(run_checker, "time", SimpleNamespace(perf_counter=lambda: next(readings)))
    outcome = call_with_timeout(_returns_late, {}, timeout_s=1.0)
    assert outcome.timed_out
    assert outcome.value is None
    assert outcome.duration_s == pytest.approx(5.0)
    assert outcome.stack == "(it returned only after the deadline)"


def test_a_result_within_the_deadline_says_how_long_it_took() -> None:
    outcome = call_with_timeout(_returns_late, {}, timeout_s=30)
    assert outcome.value == "done" and not outcome.timed_out
    assert 0.05 <= outcome.duration_s < 30
