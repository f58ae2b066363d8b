"""The base side of a comparison takes each falsifier from the newest base run that decided or
could not decide it: an inconclusive verdict there is the base, not an older run's verdict."""

from __future__ import annotations

from typing import Any

from pv.review.compare import _base_entries
from pv.review.runs import Run


def _run(run_id: str, falsifiers: dict[str, dict[str, Any]]) -> Run:
    return Run(
        "demo-v1", run_id, f"2026-01-0{run_id[-1]}T00:00:00Z", "c" * 40, False, None, False, "", None, falsifiers, "x"
    )


def test_an_inconclusive_newest_base_verdict_is_the_base() -> None:
    newest = _run("run-2", {"F-1": {"verdict": "inconclusive"}, "F-2": {"verdict": "skipped"}})
    older = _run("run-1", {"F-1": {"verdict": "survived"}, "F-2": {"verdict": "falsified"}})
    entries, runs = _base_entries([newest, older])  # newest first, as runs_of_commit gives them
    assert entries == {"F-1": {"verdict": "inconclusive"}, "F-2": {"verdict": "falsified"}}
    assert runs == {"F-1": "run-2", "F-2": "run-1"}  # a skip decides nothing: the older verdict stands
