"""The run journal: every verdict on disk the moment its falsifier ends, so a crash loses none.

While a pytest session that writes evidence runs, the controller appends one JSON line per event
to ``<evidence>/.journal/<session>-<pid>.jsonl``: the session's settings, each contract as it was
when the run started, ``start`` when a falsifier begins and ``result`` when it ends.  Each line is
one ``write`` on a file opened ``O_APPEND`` and fsynced, so a line is either whole or (the last,
torn by a crash) ignored.  A session that ends normally writes its bundles and deletes its
journal.  A journal whose process is gone is *recovered* (at the next evidence-writing session, or
by ``pv evidence recover``) into ordinary bundles marked ``recovered``: every verdict reached is
kept, and a falsifier that started and never ended is recorded as ``error``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pv.bundle.model import Environment
from pv.bundle.signing import Signer
from pv.cases import verdicts
from pv.evidence.gc import pid_alive
from pv.evidence.writer import Outcome, write_run
from pv.results import ContractRun, FalsifierResult, RunRecord, Verdict

JOURNAL_DIR = ".journal"
SUFFIX = ".jsonl"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Journal:
    """Append-only, one fsynced line per event."""

    def __init__(self, evidence_dir: Path, run_id: str) -> None:
        self.dir = evidence_dir / JOURNAL_DIR
        self.path = self.dir / f"{run_id}-{os.getpid()}{SUFFIX}"
        self._contracts: set[str] = set()

    def append(self, record: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = (json.dumps({**record, "at": _now()}, sort_keys=True, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def session(self, record: RunRecord) -> None:
        self.append(
            {
                "kind": "session",
                "run_id": record.run_id,
                "started_at": record.started_at,
                "pid": os.getpid(),
                "mutants_enabled": record.mutants_enabled,
                "selection": record.selection,
                "settings": record.settings,
            }
        )

    def contract(self, run: ContractRun) -> None:
        if run.contract_id not in self._contracts:
            self._contracts.add(run.contract_id)
            self.append({"kind": "contract", "contract": asdict(run)})

    def start(
        self, nodeid: str, contract_id: str, falsify_id: str, ship_blocking: bool, case: str | None = None
    ) -> None:
        self.append(
            {
                "kind": "start",
                "nodeid": nodeid,
                "contract_id": contract_id,
                "falsify_id": falsify_id,
                "case": case,
                "ship_blocking": ship_blocking,
            }
        )

    def result(self, nodeid: str, result: FalsifierResult) -> None:
        self.append({"kind": "result", "nodeid": nodeid, "result": result.to_json()})

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            self.dir.rmdir()  # only when empty


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # a line torn by the crash
        if isinstance(record, dict):
            yield record


def _pid_of(path: Path) -> int | None:
    tail = path.name.removesuffix(SUFFIX).rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def orphans(evidence_dir: Path) -> list[Path]:
    """Journals whose session process is gone (a crash, a kill -9, a power cut)."""
    folder = evidence_dir / JOURNAL_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        pid = _pid_of(path)
        if pid is None or (pid != os.getpid() and not pid_alive(pid)):
            out.append(path)
    return out


def record_from(path: Path) -> RunRecord | None:
    """The run a journal describes, as far as it got; ``None`` for a journal with no session line."""
    head: dict[str, Any] | None = None
    contracts: dict[str, ContractRun] = {}
    started: dict[str, dict[str, Any]] = {}
    results: dict[str, FalsifierResult] = {}
    last = ""
    for rec in _lines(path):
        last = str(rec.get("at", last))
        kind = rec.get("kind")
        try:
            if kind == "session":
                head = rec
            elif kind == "contract":
                run = ContractRun(**rec["contract"])
                contracts[run.contract_id] = run
            elif kind == "start":
                started[str(rec["nodeid"])] = rec
            elif kind == "result":
                results[str(rec["nodeid"])] = FalsifierResult.from_json(rec["result"])
        except (KeyError, TypeError, ValueError):
            continue  # a malformed line is not evidence
    if head is None:
        return None
    pid = head.get("pid", "?")
    for nodeid, rec in started.items():
        if nodeid in results:
            continue
        results[nodeid] = FalsifierResult(
            contract_id=str(rec["contract_id"]),
            falsify_id=str(rec["falsify_id"]),
            verdict=Verdict.ERROR,
            ship_blocking=bool(rec.get("ship_blocking", False)),
            case=rec.get("case"),
            message=(
                f"ERROR {rec['contract_id']}::{nodeid.split('::', 1)[-1]}: the pytest process (pid {pid}) died "
                "while this falsifier ran, so no verdict was reached (run it with isolation: process to get its exit "
                "status)"
            ),
        )
    # a contract is journaled only with a falsifier that started, so each one here ran something
    rows = verdicts(results.values(), contracts)
    return RunRecord(
        run_id=str(head.get("run_id", path.stem)),
        started_at=str(head.get("started_at", last)),
        finished_at=last or str(head.get("started_at", "")),
        contracts=contracts,
        results=rows,
        mutants_enabled=bool(head.get("mutants_enabled", False)),
        selection=str(head.get("selection", "")),
        interrupted=True,
        settings=head.get("settings") or {},
        recovered=True,
    )


def died(evidence_dir: Path) -> list[str]:
    """One line per session whose journal is orphaned: who it was, when it started, what it was running."""
    lines = []
    for path in orphans(evidence_dir):
        record = record_from(path)
        if record is None:
            lines.append(f"a session died before it recorded anything ({path.name})")
            continue
        running = sorted(
            f"{r.contract_id}::{r.falsify_id}" for r in record.results if r.message and "died while this" in r.message
        )
        doing = f"while running {', '.join(running)}" if running else "between falsifiers"
        lines.append(
            f"session {record.run_id} (pid {_pid_of(path) or '?'}, started {record.started_at}) died before it "
            f"finished, {doing}"
        )
    return lines


def recover_all(
    evidence_dir: Path,
    root: Path,
    environment: Callable[[], Environment],
    signer: Signer | None = None,
) -> list[Outcome]:
    """Write bundles for every orphaned journal, then remove it; returns what was written."""
    outcomes: list[Outcome] = []
    env: Environment | None = None
    for path in orphans(evidence_dir):
        record = record_from(path)
        if record is not None and any(r.verdict is not Verdict.NOT_RUN for r in record.results):
            env = env or environment()
            outcomes.extend(write_run(record, evidence_dir, root, env, signer))
        if all(o.path is not None for o in outcomes):
            path.unlink()
    with contextlib.suppress(OSError):
        (evidence_dir / JOURNAL_DIR).rmdir()
    return outcomes
