"""The ledger a command holds stays what reading the file gives: after each append its lines,
entries and problems are those of the file read again. And a run id recorded twice is named,
whether as ``bundle`` or ``adopted`` lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence import ledger

RUN = "20260301T100000000000Z-0000000a"
OTHER = "20260302T100000000000Z-0000000b"


def _same(held: ledger.Ledger, contract_dir: Path) -> None:
    again = ledger.read(contract_dir)
    assert (held.lines, held.entries, held.problems) == (again.lines, again.entries, again.problems)


def test_each_append_leaves_the_ledger_held_as_the_file_reads(tmp_path: Path) -> None:
    with ledger.locked(tmp_path) as chain:
        first = ledger.append(chain, "bundle", RUN, "a" * 64, verdicts={"F-1": "survived"})
        _same(chain, tmp_path)
        second = ledger.append(chain, "pruned", RUN, "a" * 64)
        _same(chain, tmp_path)
    assert chain.entries == [first, second] and chain.problems == []
    assert (second.seq, second.prev_line) == (2, ledger.line_digest(chain.lines[0]))
    assert chain.recorded() == {} and chain.removed() == {RUN: second}


@pytest.mark.parametrize(("kind", "again"), [("bundle", "bundle"), ("adopted", "adopted"), ("bundle", "adopted")])
def test_a_run_recorded_twice_is_named(tmp_path: Path, kind: ledger.EntryKind, again: ledger.EntryKind) -> None:
    with ledger.locked(tmp_path) as chain:
        ledger.append(chain, kind, RUN, "a" * 64)
        ledger.append(chain, "bundle", OTHER, "b" * 64)
        ledger.append(chain, again, RUN, "a" * 64)
    assert ledger.read(tmp_path).problems == [f"bundle {RUN} is recorded twice"]
