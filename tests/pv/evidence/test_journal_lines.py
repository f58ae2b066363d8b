"""What a journal's lines hold and what `pv evidence` says of dead sessions: UTC times in ISO form
whatever the machine's zone, values JSON has no type for, the file's mode, and one line per dead
session naming every falsifier it was running."""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pv.evidence.journal import Journal, died
from pv.results import FalsifierResult, RunRecord, Verdict
from tests.pv.evidence.test_journal_records import RUN, _dead_pid, _journal


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_line_is_stamped_in_utc_iso_form_whatever_the_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # nine hours from UTC, no daylight saving
    time.tzset()
    try:
        journal = Journal(tmp_path, "run-1")
        journal.session(RunRecord("run-1", "2026-01-01T00:00:00Z", ""))
        [line] = _lines(journal.path)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    at = datetime.strptime(str(line["at"]), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - at).total_seconds()) < 60


def test_a_result_holding_values_json_has_no_type_for_is_written(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "run-1")
    journal.session(RunRecord("run-1", "T0", ""))
    observed = FalsifierResult("demo-v1", "FALSIFY-1", Verdict.SURVIVED, True, observations={"where": Path("a/b")})
    journal.result("contracts/demo-v1.yaml::FALSIFY-1", observed)
    result = _lines(journal.path)[-1]["result"]
    assert isinstance(result, dict) and result["observations"] == {"where": "a/b"}
    assert stat.S_IMODE(os.stat(journal.path).st_mode) == 0o644 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_dead_session_names_every_falsifier_it_was_running_and_no_other(tmp_path: Path) -> None:
    pid = _dead_pid()
    journal = _journal(tmp_path, "run-7", pid)
    journal.session(RunRecord("run-7", "T0", ""))
    journal.contract(RUN)
    failed = FalsifierResult("demo-v1", "FALSIFY-1", Verdict.FALSIFIED, True, message="step0_loss(=9) <= 3")
    journal.start("contracts/demo-v1.yaml::FALSIFY-1", "demo-v1", "FALSIFY-1", True)
    journal.result("contracts/demo-v1.yaml::FALSIFY-1", failed)
    journal.start("contracts/demo-v1.yaml::FALSIFY-3", "demo-v1", "FALSIFY-3", False)
    journal.start("contracts/demo-v1.yaml::FALSIFY-2", "demo-v1", "FALSIFY-2", False)
    earlier = journal.dir / f"run-0-{pid}.jsonl"  # sorts before run-7: a session that wrote nothing
    earlier.write_text("")
    bare = journal.dir / "bare.jsonl"  # sorts first: a journal whose name holds no pid
    bare.write_text(json.dumps({"kind": "session", "run_id": "run-b", "started_at": "T9"}) + "\n")
    assert died(tmp_path) == [
        "session run-b (pid ?, started T9) died before it finished, between falsifiers",
        f"a session died before it recorded anything ({earlier.name})",
        f"session run-7 (pid {pid}, started T0) died before it finished, "
        "while running demo-v1::FALSIFY-2, demo-v1::FALSIFY-3",
    ]
