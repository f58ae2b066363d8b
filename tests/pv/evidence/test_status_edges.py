"""The status rules at their edges: which entries count as measured, how hardware skips are
counted, a gone bundle of the counting run itself, and the blocked message with several causes."""

from __future__ import annotations

from pathlib import Path

from pv.bundle.model import FalsifierEntry, MutantEntry
from pv.evidence.ledger import Entry
from pv.evidence.status import Assessment, Source, _gone_newer, pick_sources, status_from_entries, status_mismatch
from pv.model import Status
from tests.pv.evidence.test_status import _entry, _report


def test_a_selected_falsifier_that_never_ran_replaces_no_verdict() -> None:
    interrupted = FalsifierEntry(
        id="A", ship_blocking=True, selected=True, verdict="not_run", mutant=MutantEntry(declared=None, verdict=None)
    )
    got = pick_sources([_report("r2", interrupted), _report("r1", _entry("A", "survived"))])["A"]
    assert (got.run_id, got.entry.verdict) == ("r1", "survived")


def test_an_entry_outside_the_selection_is_never_measured_whatever_it_says() -> None:
    unselected = FalsifierEntry(
        id="A", ship_blocking=True, selected=False, verdict="survived", mutant=MutantEntry(declared=None, verdict=None)
    )
    got = pick_sources([_report("r2", unselected), _report("r1", _entry("A", "falsified"))])["A"]
    assert (got.run_id, got.entry.verdict) == ("r1", "falsified")


def test_every_hardware_skip_counts_toward_the_ladder_once() -> None:
    hw = [_entry(f"H{i}", "skipped", skip_kind="hardware", skip_reason="no CUDA") for i in (1, 2)]
    status, reasons, _ = status_from_entries([_entry("A", "survived"), *hw])
    assert status is Status.ACTIVE_ALGORITHM_LEVEL
    assert reasons == ["H1: skipped (no CUDA)", "H2: skipped (no CUDA)"]
    one_short = [_entry("A", "survived"), hw[0], _entry("B", "error")]
    assert status_from_entries(one_short)[0] is Status.DRAFT


def test_a_removed_entry_of_the_counting_run_itself_is_not_newer() -> None:
    sources = {"A": Source(_entry("A", "survived"), Path("b"), "r2")}
    assert _gone_newer(sources, [Entry(3, "pruned", "r2", "d", {"A": "falsified"})]) == {}


def test_blocked_evidence_names_every_cause() -> None:
    found = Assessment(Status.DRAFT, None, blocked=["ledger broken at line 3", "bundle r1 is gone"])
    assert status_mismatch(Status.ACTIVE, found) == "evidence blocked: ledger broken at line 3; bundle r1 is gone"
