"""What reading a ledger says of its removal lines and of a file it cannot read: an adopted
bundle pruned is a removal like any other; a forgotten line whose bundle no line records does not
hide a later removal of nothing; a removal claiming the seq of the line it removes is named for
its seq alone; a ledger that is not text is unreadable, and says so."""

from __future__ import annotations

import json
from pathlib import Path

from pv.evidence import ledger

RUN = "20260301T100000000000Z-0000000a"
OTHER = "20260302T100000000000Z-0000000b"


def test_an_adopted_bundle_pruned_reads_clean(tmp_path: Path) -> None:
    with ledger.locked(tmp_path) as chain:
        ledger.append(chain, "adopted", RUN, "a" * 64)
        ledger.append(chain, "pruned", RUN, "a" * 64)
    assert ledger.read(tmp_path).problems == []


def test_a_forgotten_line_of_nothing_does_not_hide_a_later_removal_of_nothing(tmp_path: Path) -> None:
    with ledger.locked(tmp_path) as chain:
        ledger.append(chain, "forgotten", RUN, "a" * 64)  # its bundle's line was lost with it
        ledger.append(chain, "pruned", OTHER, "b" * 64)
    assert ledger.read(tmp_path).problems == [f"line 2 removes {OTHER}, which no earlier line records"]


def test_a_removal_with_the_seq_of_its_record_is_named_for_its_seq(tmp_path: Path) -> None:
    with ledger.locked(tmp_path) as chain:
        ledger.append(chain, "bundle", RUN, "a" * 64)
    path = tmp_path / ledger.LEDGER_FILE
    first = path.read_text().splitlines()[0]
    forged = {"seq": 1, "kind": "pruned", "run_id": RUN, "digest": "a" * 64, "prev_line": ledger.line_digest(first)}
    path.write_text(first + "\n" + json.dumps(forged) + "\n")
    # named once, for its seq: the record it removes still comes first
    assert ledger.read(tmp_path).problems == ["line 2 says seq 1: lines were removed, added or reordered"]


def test_a_ledger_that_is_not_utf8_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / ledger.LEDGER_FILE).write_bytes(b'{"seq": 1, "reason": "\xff"}\n')
    found = ledger.read(tmp_path)
    assert len(found.problems) == 1 and found.problems[0].startswith("unreadable: ")
    assert "utf-8" in found.problems[0] and found.entries == []
