"""A bundle replaced after it was recorded does not hide the bundles recorded after it: a later
one gone, or a later one replaced too, is named as well. Built on the ledger alone (a manifest is
all a bundle's digest reads), so no writer is involved."""

from __future__ import annotations

from pathlib import Path

from pv.bundle.model import MANIFEST_FILE
from pv.evidence import ledger

RUNS = ("20260301T100000000000Z-0000000a", "20260302T100000000000Z-0000000b", "20260303T100000000000Z-0000000c")


def _recorded(contract_dir: Path) -> dict[str, Path]:
    folders = {}
    with ledger.locked(contract_dir) as chain:
        for run_id in RUNS:
            folder = contract_dir / run_id
            folder.mkdir()
            (folder / MANIFEST_FILE).write_text(f"{'0' * 64}  bundle.json of {run_id}\n")
            digest = ledger.bundle_digest(folder)
            assert digest is not None
            ledger.append(chain, "bundle", run_id, digest)
            folders[run_id] = folder
    return folders


def _edit(folder: Path) -> None:
    manifest = folder / MANIFEST_FILE
    manifest.write_text(manifest.read_text() + "\n")


def test_a_replaced_bundle_does_not_hide_a_later_one_gone(tmp_path: Path) -> None:
    folders = _recorded(tmp_path / "demo-v1")
    _edit(folders[RUNS[0]])
    del folders[RUNS[1]]
    found = ledger.check(ledger.read(tmp_path / "demo-v1"), folders, dict.fromkeys(folders))
    assert len(found.problems) == 2
    assert found.problems[0] == f"bundle {RUNS[0]} (ledger line 1) was replaced or edited after it was recorded"
    assert found.problems[1].startswith(f"bundle {RUNS[1]} (ledger line 2) is gone: ")


def test_a_replaced_bundle_does_not_hide_a_later_one_replaced(tmp_path: Path) -> None:
    folders = _recorded(tmp_path / "demo-v1")
    _edit(folders[RUNS[0]])
    _edit(folders[RUNS[2]])
    found = ledger.check(ledger.read(tmp_path / "demo-v1"), folders, dict.fromkeys(folders))
    assert found.problems == [
        f"bundle {RUNS[0]} (ledger line 1) was replaced or edited after it was recorded",
        f"bundle {RUNS[2]} (ledger line 3) was replaced or edited after it was recorded",
    ]
