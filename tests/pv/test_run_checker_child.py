"""What a checker's forked process does besides the call: state sent back, torch held to one
thread, and the deadline's kill when the child could not have a process group of its own."""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from pv.run_checker import call_in_process


class Recorder:
    """A fixture value that records in the child what the parent must see afterwards."""

    def __init__(self) -> None:
        self.records: list[str] = []

    def pv_child_state(self) -> list[str]:
        return list(self.records)

    def pv_restore_state(self, state: list[str]) -> None:
        self.records[:] = state


def _record(recorder: Recorder, plain: list[str]) -> str:
    recorder.records.append("seen in the child")
    plain.append("lost with the child")
    return "done"


def _record_then_fail(recorder: Recorder) -> None:
    recorder.records.append("before the failure")
    raise ValueError("the checker failed")


def _record_then_skip(recorder: Recorder) -> None:
    recorder.records.append("before the skip")
    pytest.skip("nothing to measure here")


def test_what_a_fixture_recorded_in_the_child_comes_back_to_the_parents_object() -> None:
    recorder, plain = Recorder(), []
    outcome = call_in_process(_record, {"recorder": recorder, "plain": plain}, timeout_s=30)
    assert outcome.value == "done"
    assert recorder.records == ["seen in the child"]
    assert plain == []  # an object without pv_child_state is not sent back


@pytest.mark.parametrize(
    ("checker", "expected"),
    [(_record_then_fail, "before the failure"), (_record_then_skip, "before the skip")],
)
def test_the_state_comes_back_when_the_checker_fails_or_skips(checker: Any, expected: str) -> None:
    recorder = Recorder()
    outcome = call_in_process(checker, {"recorder": recorder}, timeout_s=30)
    assert outcome.value is None and (outcome.error_text or outcome.skip_reason)
    assert recorder.records == [expected]


def _fake_torch(fails: bool) -> types.ModuleType:
    module = types.ModuleType("torch")
    module.calls = []  # type: ignore[attr-defined]

    def set_num_threads(n: int) -> None:
        module.calls.append(n)  # type: ignore[attr-defined]
        if fails:
            raise RuntimeError("set_num_threads refused")

    module.set_num_threads = set_num_threads  # type: ignore[attr-defined]
    return module


def _torch_calls() -> list[Any]:
    return list(sys.modules["torch"].calls)  # type: ignore[attr-defined]


@pytest.mark.parametrize("fails", [False, True])
def test_a_child_holds_a_loaded_torch_to_one_thread_and_runs_even_if_torch_refuses(
    monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(fails))
    outcome = call_in_process(_torch_calls, {}, timeout_s=30)
    assert outcome.error_text == "" and outcome.value == [1]
    assert sys.modules["torch"].calls == []  # type: ignore[attr-defined]  # the parent's torch is untouched


def _no_torch() -> bool:
    return "torch" in sys.modules


def test_a_child_without_torch_loaded_does_not_load_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert call_in_process(_no_torch, {}, timeout_s=30).value is False


def _sleep_then_write(out: str) -> None:
    time.sleep(3.0)
    Path(out).write_text("the checker outlived its deadline")


def _refuse_setpgid(pid: int, pgrp: int) -> None:
    raise PermissionError("setpgid refused")


def test_the_deadline_kills_a_child_that_has_no_process_group_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the child stays in pytest's group: there is no group to kill, so the child itself is killed
    monkeypatch.setattr(os, "setpgid", _refuse_setpgid)
    out = tmp_path / "late.txt"
    outcome = call_in_process(_sleep_then_write, {"out": str(out)}, timeout_s=0.5)
    assert outcome.timed_out and outcome.killed
    assert not out.exists()  # the child was gone before the call returned: it never woke to write
