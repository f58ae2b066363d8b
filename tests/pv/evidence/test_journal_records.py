"""A dead session's journal read back in this process, field by field: what the recovered run
says about itself (id, times, selection, settings), each falsifier that never ended, and the line
`pv evidence` prints for it.  The crash tests (test_journal.py) kill real pytest processes; these
pin what is read from what they leave."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pv.evidence.journal import JOURNAL_DIR, Journal, _pid_of, died, orphans, record_from
from pv.results import ContractRun, FalsifierResult, RunRecord, Verdict


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def _journal(evidence: Path, run_id: str, pid: int) -> Journal:
    journal = Journal(evidence, run_id)
    journal.path = journal.dir / f"{run_id}-{pid}.jsonl"
    return journal


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


RUN = ContractRun(
    "demo-v1",
    "contracts/demo-v1.yaml",
    "ab" * 32,
    "1.0.0",
    "DRAFT",
    ["FALSIFY-1", "FALSIFY-2", "FALSIFY-3"],
    ["FALSIFY-1"],
)


def test_a_dead_sessions_journal_becomes_its_run(tmp_path: Path) -> None:
    pid = _dead_pid()
    journal = _journal(tmp_path, "run-7", pid)
    record = RunRecord(
        "run-7", "2026-01-01T00:00:00Z", "", mutants_enabled=True, selection="ship_blocking", settings={"seed": 3}
    )
    journal.session(record)
    journal.contract(RUN)
    journal.contract(RUN)  # once per contract
    journal.start("contracts/demo-v1.yaml::FALSIFY-1", "demo-v1", "FALSIFY-1", True)
    journal.result("contracts/demo-v1.yaml::FALSIFY-1", FalsifierResult("demo-v1", "FALSIFY-1", Verdict.SURVIVED, True))
    journal.start("contracts/demo-v1.yaml::FALSIFY-2[a]", "demo-v1", "FALSIFY-2", False, case="a")
    lines = _lines(journal.path)
    assert [line["kind"] for line in lines] == ["session", "contract", "start", "result", "start"]
    assert lines[0]["pid"] == os.getpid()

    got = record_from(journal.path)
    assert got is not None
    assert (got.run_id, got.started_at, got.finished_at) == ("run-7", "2026-01-01T00:00:00Z", lines[-1]["at"])
    assert (got.mutants_enabled, got.selection, got.settings) == (True, "ship_blocking", {"seed": 3})
    assert (got.interrupted, got.recovered) == (True, True)
    assert got.contracts == {"demo-v1": RUN}
    by_id = {r.falsify_id: r for r in got.results}
    assert by_id["FALSIFY-1"].verdict is Verdict.SURVIVED
    assert by_id["FALSIFY-2"].verdict is Verdict.ERROR and by_id["FALSIFY-2"].ship_blocking is False
    assert (by_id["FALSIFY-2"].message or "").splitlines()[1] == (
        f"ERROR demo-v1::FALSIFY-2[a]: the pytest process (pid {os.getpid()}) died while this falsifier ran, so no "
        "verdict was reached (run it with isolation: process to get its exit status)"
    )
    assert by_id["FALSIFY-3"].verdict is Verdict.NOT_RUN

    assert orphans(tmp_path) == [journal.path]
    assert died(tmp_path) == [
        f"session run-7 (pid {pid}, started 2026-01-01T00:00:00Z) died before it finished, "
        "while running demo-v1::FALSIFY-2"
    ]


def test_a_journal_head_without_its_fields(tmp_path: Path) -> None:
    folder = tmp_path / JOURNAL_DIR
    folder.mkdir()
    path = folder / "bare-123.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"kind": "session"}),
                "{torn",
                json.dumps({"kind": "contract", "contract": {"contract_id": "x"}}),  # malformed: skipped
                json.dumps(
                    {
                        "kind": "start",
                        "nodeid": "n::FALSIFY-9",
                        "contract_id": "c-v1",
                        "falsify_id": "FALSIFY-9",
                        "at": "T2",
                    }
                ),
                json.dumps(["not", "a", "record"]),
            ]
        )
        + "\n"
    )
    got = record_from(path)
    assert got is not None
    assert (got.run_id, got.started_at, got.finished_at) == ("bare-123", "T2", "T2")
    assert (got.mutants_enabled, got.selection, got.settings, got.contracts) == (False, "", {}, {})
    assert [(r.falsify_id, r.verdict, r.ship_blocking, r.case) for r in got.results] == [
        ("FALSIFY-9", Verdict.ERROR, False, None)
    ]
    assert "(pid ?)" in (got.results[0].message or "")


def test_a_journal_with_no_time_at_all(tmp_path: Path) -> None:
    path = tmp_path / "x-1.jsonl"
    path.write_text(json.dumps({"kind": "session", "started_at": "T0"}) + "\n")
    got = record_from(path)
    assert got is not None and (got.started_at, got.finished_at, got.results) == ("T0", "T0", [])
    path.write_text(json.dumps({"kind": "start"}) + "\n")
    assert record_from(path) is None  # no session line: nothing to recover


def test_a_session_that_died_between_falsifiers_or_before_its_first_line(tmp_path: Path) -> None:
    pid = _dead_pid()
    journal = _journal(tmp_path, "run-8", pid)
    journal.session(RunRecord("run-8", "T0", ""))
    empty = journal.dir / f"run-9-{pid}.jsonl"
    empty.write_text("")
    assert died(tmp_path) == [
        f"session run-8 (pid {pid}, started T0) died before it finished, between falsifiers",
        f"a session died before it recorded anything (run-9-{pid}.jsonl)",
    ]


@pytest.mark.parametrize(
    ("name", "pid"),
    [
        ("run-1-2-345.jsonl", 345),
        ("run-345.jsonl", 345),
        ("run-x.jsonl", None),
        ("345.jsonl", 345),
        ("run-3a.jsonl", None),
    ],
)
def test_the_pid_is_the_last_dash_separated_number(name: str, pid: int | None) -> None:
    assert _pid_of(Path(name)) == pid


def test_a_journal_of_a_living_session_or_this_one_is_no_orphan(tmp_path: Path) -> None:
    folder = tmp_path / JOURNAL_DIR
    folder.mkdir()
    (folder / f"a-{os.getpid()}.jsonl").write_text("")
    (folder / f"b-{os.getppid()}.jsonl").write_text("")
    (folder / "c-nopid.jsonl").write_text("")
    (folder / "d-1.txt").write_text("")
    assert [p.name for p in orphans(tmp_path)] == ["c-nopid.jsonl"]
    assert orphans(tmp_path / "elsewhere") == []


def test_a_ship_blocking_falsifier_that_never_ended_and_a_head_without_times(tmp_path: Path) -> None:
    path = tmp_path / "bare-9.jsonl"
    lines = [
        {"kind": "session", "mutants_enabled": True},
        {
            "kind": "start",
            "nodeid": "c.yaml::FALSIFY-1",
            "contract_id": "c-v1",
            "falsify_id": "FALSIFY-1",
            "ship_blocking": True,
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = record_from(path)
    assert got is not None and (got.started_at, got.finished_at, got.mutants_enabled) == ("", "", True)
    assert [(r.falsify_id, r.ship_blocking) for r in got.results] == [("FALSIFY-1", True)]
