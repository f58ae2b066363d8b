"""A ledger line's optional fields read back empty when absent: a line written without a reason
(every plain bundle line) has none, and a line without a time (written by hand, or by an older pv)
has none, not a placeholder word that `pv evidence` would then show as if it had been recorded."""

from __future__ import annotations

import json
from pathlib import Path

from pv.evidence import ledger as lg


def test_a_line_without_a_reason_reads_back_with_none(tmp_path: Path) -> None:
    with lg.locked(tmp_path) as led:
        written = lg.append(led, "bundle", "r1", "d-r1")
        lg.append(led, "forgotten", "r0", "d-r0", reason="lost with its disk")
    assert "reason" not in json.loads((tmp_path / lg.LEDGER_FILE).read_text().splitlines()[0])
    assert written.reason == ""
    assert [e.reason for e in lg.read(tmp_path).entries] == ["", "lost with its disk"]


def test_a_line_without_a_time_reads_back_with_none(tmp_path: Path) -> None:
    line = {"seq": 1, "kind": "bundle", "run_id": "r1", "digest": "d-r1", "prev_line": None}
    (tmp_path / lg.LEDGER_FILE).write_text(json.dumps(line) + "\n")
    ledger = lg.read(tmp_path)
    assert ledger.problems == [] and [e.at for e in ledger.entries] == [""]
