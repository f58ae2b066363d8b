"""The newest bundle a ledger records may be one it adopted (written before the ledger, taken in by
`pv evidence ledger adopt`): the next bundle's chain link points at it, as at any other."""

from __future__ import annotations

from pathlib import Path

from pv.evidence import ledger as lg


def test_an_adopted_bundle_can_be_the_last(tmp_path: Path) -> None:
    with lg.locked(tmp_path) as led:
        lg.append(led, "bundle", "r1", "d-r1")
        lg.append(led, "adopted", "r2", "d-r2")
        lg.append(led, "forgotten", "r0", "d-r0")
    last = lg.read(tmp_path).last_bundle()
    assert last is not None and (last.kind, last.run_id, last.digest) == ("adopted", "r2", "d-r2")
