"""What comes back from a checker's forked process: its skip, its failure, a reply too big for one
pipe read, a value that cannot leave the process, and how long the call took."""

from __future__ import annotations

import os
import signal
import time

import pytest

from pv.run_checker import NotAChildError, _child_main, call_in_process


def _skips() -> None:
    pytest.skip("nothing to measure here")


def _fails() -> None:
    raise ValueError("the checker failed")


def _big() -> bytes:
    return bytes(range(256)) * (12 * 1024)  # 3 MiB: several pipe reads and writes


def _unpicklable() -> object:
    return lambda: 1


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _slow(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


def test_a_skip_comes_back_as_the_skip_it_was() -> None:
    outcome = call_in_process(_skips, {}, timeout_s=30)
    assert outcome.skip_reason == "nothing to measure here" and outcome.error_text == ""


def test_a_failure_comes_back_as_its_traceback() -> None:
    outcome = call_in_process(_fails, {}, timeout_s=30)
    assert outcome.skip_reason is None and outcome.value is None
    assert "ValueError: the checker failed" in outcome.error_text


def test_a_reply_larger_than_a_pipe_read_comes_back_whole() -> None:
    outcome = call_in_process(_big, {}, timeout_s=60)
    assert outcome.error_text == "" and outcome.value == _big()


def test_a_value_that_cannot_leave_the_process_is_an_error_naming_why() -> None:
    outcome = call_in_process(_unpicklable, {}, timeout_s=30)
    assert outcome.value is None
    assert outcome.error_text.startswith("the checker's return value cannot be sent back from its process: ")
    assert "Error: " in outcome.error_text  # the exception's type and text


def test_a_child_killed_before_it_replied_says_so_and_how_long_it_ran() -> None:
    outcome = call_in_process(_killed, {}, timeout_s=30)
    assert outcome.error_text == "the checker's process was killed by SIGKILL (9) before it returned"
    assert 0 < outcome.duration_s < 30


@pytest.mark.parametrize("timeout_s", [None, 0])
def test_no_deadline_lets_the_checker_finish(timeout_s: float | None) -> None:
    outcome = call_in_process(_slow, {"seconds": 0.3}, timeout_s=timeout_s)
    assert outcome.value == "done" and not outcome.timed_out
    assert 0.3 <= outcome.duration_s < 30


def test_a_timed_out_call_says_how_long_it_waited() -> None:
    outcome = call_in_process(_slow, {"seconds": 30}, timeout_s=0.5)
    assert outcome.timed_out and outcome.killed
    assert 0.5 <= outcome.duration_s < 25


def test_the_childs_side_refuses_to_run_in_the_process_that_forked_it() -> None:
    # it would end pytest's own process with os._exit(0): a green exit with nothing reported
    read_end, write_end = os.pipe()
    life_r, life_w = os.pipe()
    try:
        with pytest.raises(NotAChildError) as raised:
            _child_main(_skips, {}, write_end, life_r, os.getpid())
        assert str(raised.value) == "the checker's child process code ran in the process that forked it"
    finally:
        for fd in (read_end, write_end, life_r, life_w):
            os.close(fd)
