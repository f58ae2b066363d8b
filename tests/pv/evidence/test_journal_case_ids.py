"""A falsifier that never ended is named by its whole id after the contract's file, even when its
case id itself holds "::" (a parametrized string such as a module:function path or a C++ name)."""

from __future__ import annotations

import re
from pathlib import Path

from pv.evidence.journal import record_from
from pv.results import RunRecord, Verdict
from tests.pv.evidence.test_journal_records import RUN, _dead_pid, _journal


def test_an_unfinished_case_whose_id_holds_colons_is_named_whole(tmp_path: Path) -> None:
    pid = _dead_pid()
    journal = _journal(tmp_path, "run-9", pid)
    journal.session(RunRecord("run-9", "2026-01-01T00:00:00Z", "", mutants_enabled=False))
    journal.contract(RUN)
    nodeid = "contracts/demo-v1.yaml::FALSIFY-2[std::vector::push_back]"
    journal.start(nodeid, "demo-v1", "FALSIFY-2", False, case="std::vector::push_back")
    record = record_from(journal.path)
    assert record is not None
    [falsifier] = [r for r in record.results if r.falsify_id == "FALSIFY-2"]
    [unfinished] = [c for c in falsifier.cases if c.verdict is Verdict.ERROR]
    assert unfinished.case == "std::vector::push_back"
    assert re.match(
        r"ERROR demo-v1::FALSIFY-2\[std::vector::push_back\]: the pytest process \(pid \d+\) died ", unfinished.message
    ), unfinished.message
