"""What `pv evidence gc` keeps and removes, bundle by bundle, and what the ledger says of each removal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pv.evidence import gc, ledger


def _bundles(evidence: Path, contract: str, *run_ids: str) -> list[Path]:
    out = []
    for run_id in run_ids:
        folder = evidence / contract / run_id
        folder.mkdir(parents=True)
        (folder / "MANIFEST.sha256").write_text(run_id)
        (folder / "bundle.json").write_text("{}")
        out.append(folder)
    return out


def _runs(n: int) -> list[str]:
    return [f"2026010{i}T000000000001Z-0000000{i}" for i in range(1, n + 1)]


def test_the_plan(tmp_path: Path) -> None:
    ev = tmp_path / "evidence"
    b1, b2, b3, b4 = _bundles(ev, "a-v1", *_runs(4))
    (c1,) = _bundles(ev, "b-v1", *_runs(1))
    found = gc.plan(ev, keep=2, backing=[b1], history=[b2, c1])
    assert sorted(found.history) == sorted([b2, c1])
    assert found.protected == [b1] and sorted(found.keep) == [b3, b4]
    assert sorted(found.remove) == sorted([b2, c1])
    again = gc.plan(ev, keep=1, backing=[b2], history=[b2])  # backing wins over history
    assert (
        again.history == []
        and again.protected == [b2]
        and sorted(again.keep) == [b4, c1]
        and sorted(again.remove) == sorted([b1, b3])
    )
    with pytest.raises(ValueError) as caught:
        gc.plan(ev, keep=0, backing=[])
    assert str(caught.value) == "--keep must be at least 1"


def test_left_over_write_folders(tmp_path: Path) -> None:
    ev = tmp_path / "evidence"
    (ev / "a-v1").mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    for name in (f".tmp-x-{dead.stdout.strip()}", f".tmp-y-{os.getpid()}", f".tmp-z-{os.getppid()}", ".tmp-w-nopid"):
        (ev / "a-v1" / name).mkdir()
    (ev / "a-v1" / ".tmp-file").write_text("not a folder")
    names = [p.name for p in gc.stale_tmp_dirs(ev)]
    assert names == [".tmp-w-nopid", f".tmp-x-{dead.stdout.strip()}", f".tmp-y-{os.getpid()}"]  # this process's own too
    assert gc.stale_tmp_dirs(tmp_path / "none") == []
    assert gc.pid_alive(os.getpid()) and not gc.pid_alive(int(dead.stdout))


def test_apply_prunes_in_the_ledger_first(tmp_path: Path) -> None:
    ev = tmp_path / "evidence"
    b1, b2 = _bundles(ev, "a-v1", *_runs(2))
    with ledger.locked(ev / "a-v1") as chain:
        ledger.append(chain, "bundle", b1.name, ledger.bundle_digest(b1) or "", verdicts={"F1": "survived"})
    tmp = ev / "a-v1" / ".tmp-gone-1"
    tmp.mkdir()
    gc.apply(gc.GcPlan(remove=[b1, b2], tmp=[tmp]))
    assert not b1.exists() and not b2.exists() and not tmp.exists()
    after = ledger.read(ev / "a-v1")
    assert after.problems == [] and [(e.kind, e.run_id, e.verdicts) for e in after.entries] == [
        ("bundle", b1.name, {"F1": "survived"}),
        ("pruned", b1.name, {"F1": "survived"}),
    ]


def test_the_bundles_a_changelog_names(tmp_path: Path) -> None:
    data = {"metadata": {"changelog": [{"evidence": "evidence/a/1"}, {"change": "x"}, {"evidence": 3}, "text"]}}
    assert gc.changelog_bundles(data, tmp_path) == [tmp_path / "evidence/a/1"]
    assert gc.changelog_bundles({"metadata": {"changelog": "x"}}, tmp_path) == []
    assert gc.changelog_bundles({"metadata": []}, tmp_path) == [] and gc.changelog_bundles(None, tmp_path) == []
