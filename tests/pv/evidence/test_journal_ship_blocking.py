"""A falsifier whose process died keeps what the journal knew of it: whether it was ship-blocking."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence.journal import record_from
from pv.results import RunRecord, Verdict
from tests.pv.evidence.test_journal_records import RUN, _dead_pid, _journal


@pytest.mark.parametrize("ship_blocking", [True, False])
def test_an_unfinished_falsifier_keeps_its_ship_blocking_flag(tmp_path: Path, ship_blocking: bool) -> None:
    journal = _journal(tmp_path, "run-3", _dead_pid())
    journal.session(RunRecord("run-3", "2026-01-01T00:00:00Z", "", mutants_enabled=False))
    journal.contract(RUN)
    journal.start("contracts/demo-v1.yaml::FALSIFY-1", "demo-v1", "FALSIFY-1", ship_blocking)
    record = record_from(journal.path)
    assert record is not None
    [falsifier] = [r for r in record.results if r.falsify_id == "FALSIFY-1"]
    assert (falsifier.verdict, falsifier.ship_blocking) == (Verdict.ERROR, ship_blocking)
