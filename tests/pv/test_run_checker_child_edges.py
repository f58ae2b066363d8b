"""A forked checker's call at its edges: how long a skip or a failure took, a fixture value that
sends state back but takes none, and a state that cannot be captured."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pv.run_checker import call_in_process


class SendsOnly:
    """A fixture value with state to show the parent but no way to take it back."""

    def pv_child_state(self) -> str:
        return "seen in the child"


class CannotSay:
    def pv_child_state(self) -> str:
        raise RuntimeError("no state to give")


def _skips_late() -> None:
    time.sleep(0.05)
    pytest.skip("nothing to measure here")


def _fails_late() -> None:
    time.sleep(0.05)
    raise ValueError("the checker failed")


def _returns(value: object) -> str:
    return "done"


@pytest.mark.parametrize("func", [_skips_late, _fails_late])
def test_a_skip_or_a_failure_says_how_long_the_call_ran(func: Callable[[], None]) -> None:
    outcome = call_in_process(func, {}, timeout_s=30)
    assert outcome.skip_reason or outcome.error_text
    assert 0.05 <= outcome.duration_s < 30


def test_a_fixture_value_that_takes_no_state_back_is_left_as_it_was() -> None:
    value = SendsOnly()
    outcome = call_in_process(_returns, {"value": value}, timeout_s=30)
    assert outcome.value == "done" and outcome.error_text == ""


def test_a_state_that_cannot_be_captured_ends_the_child_without_a_reply() -> None:
    outcome = call_in_process(_returns, {"value": CannotSay()}, timeout_s=30)
    assert outcome.value is None
    assert outcome.error_text == "the checker's process exited with status 0 before it returned"
