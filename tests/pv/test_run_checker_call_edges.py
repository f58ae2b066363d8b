"""A checker's call on the paths the plain cases do not take: without a deadline (in the calling
thread) a value, a failure and a skip each say how long they took; with one, the checker's thread
is a named daemon and the wait never passes the deadline; a reply that cannot be read is named."""

from __future__ import annotations

import functools
import select
import threading
import time
from typing import Any

import pytest

from pv import run_checker
from pv.run_checker import call_in_process, call_with_timeout
from tests.pv.test_run_checker_child_edges import _fails_late, _skips_late
from tests.pv.test_run_checker_replies import _slow


def _returns_late() -> str:
    time.sleep(0.05)
    return "done"


def _thread() -> tuple[str, bool]:
    here = threading.current_thread()
    return here.name, here.daemon


def _explode() -> None:
    raise RuntimeError("cannot be rebuilt here")


class Unreadable:
    """Pickles in the child; rebuilding it in the parent raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_explode, ())


def _unreadable() -> Unreadable:
    return Unreadable()


@pytest.mark.parametrize("timeout_s", [None, 0])
def test_without_a_deadline_every_ending_says_how_long_it_took(timeout_s: float | None) -> None:
    value = call_with_timeout(_returns_late, {}, timeout_s)
    failure = call_with_timeout(_fails_late, {}, timeout_s)
    try:
        skip = call_with_timeout(_skips_late, {}, timeout_s)
    except BaseException as exc:  # a skip that escaped would skip this test instead of failing it
        pytest.fail(f"the checker's skip escaped the call: {exc!r}")
    assert value.value == "done" and isinstance(failure.error, ValueError)
    assert isinstance(skip.error, pytest.skip.Exception) and str(skip.error) == "nothing to measure here"
    for outcome in (value, failure, skip):
        assert 0.05 <= outcome.duration_s < 30


def test_with_a_deadline_the_checker_runs_in_a_named_daemon_thread() -> None:
    outcome = call_with_timeout(_thread, {}, timeout_s=30)
    assert outcome.value == ("pv-checker-_thread", True)


def test_the_wait_for_a_forked_checker_never_passes_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []
    real = select.select

    def recording(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
        waits.append(timeout)
        return real(r, w, x, timeout)

    monkeypatch.setattr(run_checker.select, "select", recording)
    outcome = call_in_process(_slow, {"seconds": 30}, timeout_s=0.2)
    assert outcome.timed_out and waits
    assert all(w is not None and 0 <= w <= 0.2 for w in waits)


def test_a_reply_that_cannot_be_read_is_named_with_how_the_child_ended() -> None:
    outcome = call_in_process(_unreadable, {}, timeout_s=30)
    assert outcome.value is None
    assert outcome.error_text == (
        "the checker's reply could not be read: cannot be rebuilt here; "
        "the checker's process exited with status 0 before it returned"
    )


def test_a_checker_without_a_name_runs_in_a_thread_named_for_a_checker() -> None:
    outcome = call_with_timeout(functools.partial(_thread), {}, timeout_s=30)
    assert outcome.value == ("pv-checker-checker", True)


def test_a_checker_past_its_deadline_says_how_long_it_was_given() -> None:
    outcome = call_with_timeout(_slow, {"seconds": 2}, timeout_s=0.2)
    assert outcome.timed_out and 0.2 <= outcome.duration_s < 2
