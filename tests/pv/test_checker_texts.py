"""The texts pv writes about a checker into a verdict's message: the traceback of what it raised, the
stack of a checker still running at its timeout, the refusal of ``os._exit``; the run id the
ledger's history reads from a line; and the artifacts a bundle copies, byte for byte."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pv.evidence.ledger import _run_id_of
from pv.evidence.writer import _copy_file
from pv.run_checker import (
    CheckerExitError,
    FalsifierText,
    _exit_guard,
    _format_exception,
    _stack_of,
    falsified_report,
)


def _inner() -> None:
    raise ValueError("boom")


def _outer() -> None:
    _inner()


def test_a_traceback_starts_below_the_frame_that_caught_it_and_ends_at_the_error() -> None:
    try:
        _outer()
    except ValueError as exc:
        text = _format_exception(exc)
    else:
        raise AssertionError("unreachable")
    lines = text.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: boom" and not text.endswith("\n") and text == text.strip()
    assert [line.split(", in ")[-1] for line in lines if line.startswith('  File "')] == ["_outer", "_inner"]


def test_an_exception_never_raised_is_its_type_and_message() -> None:
    assert _format_exception(KeyError("k")) == "KeyError: 'k'"


def _deep(depth: int, ready: threading.Event, release: threading.Event) -> None:
    if depth:
        _deep(depth - 1, ready, release)
        return
    ready.set()
    release.wait(10)


def _running(body: Callable[[threading.Event, threading.Event], None]) -> tuple[threading.Thread, threading.Event]:
    ready, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=body, args=(ready, release), daemon=True)
    thread.start()
    assert ready.wait(10)
    return thread, release


def test_a_running_checker_s_stack_is_its_innermost_frames() -> None:
    thread, release = _running(lambda ready, release: _deep(20, ready, release))
    try:
        text = _stack_of(thread)
        short = _stack_of(thread, limit=3)
    finally:
        release.set()
        thread.join(10)
    # 12 frames: 9 recursive calls (traceback shows 3 and counts the rest), the call that waits, 2 in threading
    frames = [line for line in text.splitlines() if line.startswith('  File "')]
    assert [f.split(", in ")[-1] for f in frames] == ["_deep"] * 4 + ["wait", "wait"]
    assert "  [Previous line repeated 6 more times]" in text.splitlines()
    assert text.startswith('  File "') and text == text.rstrip()
    assert [f.split(", in ")[-1] for f in short.splitlines() if f.startswith('  File "')] == ["_deep", "wait", "wait"]


def test_a_thread_that_never_ran_has_no_stack() -> None:
    assert _stack_of(threading.Thread(target=print)) == ""


def test_os_exit_under_thread_isolation_is_refused_with_the_way_out() -> None:
    with pytest.raises(CheckerExitError) as refused, _exit_guard():
        os._exit(3)
    assert str(refused.value) == (
        "the checker called os._exit(3), which would end the whole pytest session at once: no evidence written "
        "and, for status 0, a green exit status; refused under isolation: thread (use isolation: process for a "
        "checker that must end its process)"
    )


@pytest.mark.parametrize(
    ("line", "run_id"),
    [
        ('{"run_id": "20261202T120000Z-ab", "kind": "run"}', "20261202T120000Z-ab"),
        ('{"kind": "run"}', ""),
        ('["run_id"]', ""),
        ("not json", ""),
    ],
)
def test_the_run_id_of_a_ledger_line(line: str, run_id: str) -> None:
    assert _run_id_of(line) == run_id


def target(ready: threading.Event, release: threading.Event) -> None:
    """Named as the harness' own thread wrapper is, in another file: its frame is the checker's."""
    _deep(2, ready, release)


def test_only_the_harness_wrapper_is_cut_from_a_stack() -> None:
    thread, release = _running(target)
    try:
        text = _stack_of(thread, limit=30)
    finally:
        release.set()
        thread.join(10)
    assert [line.split(", in ")[-1] for line in text.splitlines() if line.startswith('  File "')][-6:] == [
        "target", "_deep", "_deep", "_deep", "wait", "wait",
    ]  # fmt: skip


def test_artifacts_copied_into_one_folder_each_arrive_whole(tmp_path: Path) -> None:
    sources = [tmp_path / "a.bin", tmp_path / "b.bin"]
    for n, src in enumerate(sources):
        src.write_bytes(bytes(range(256)) * (4096 * (n + 1)))  # 1 MiB and 2 MiB: more than one chunk
    for src in sources:
        _copy_file(src, tmp_path / "bundle" / "artifacts" / src.name)  # the folder exists for the second
    assert [(tmp_path / "bundle" / "artifacts" / s.name).read_bytes() == s.read_bytes() for s in sources] == [True] * 2


def test_a_falsified_report_writes_observations_json_cannot_hold_as_their_repr() -> None:
    report = falsified_report(FalsifierText("demo-v1::FALSIFY-DEMO-001"), "x < 1", "x(=2) < 1", {"x": 2, "seen": {3}})
    assert report.splitlines()[1:4] == [
        "  expect:       x < 1",
        "  with values:  x(=2) < 1",
        '  observations: {"seen": "{3}", "x": 2}',
    ]
