"""How ``apply`` writes: the changelog's date is today in UTC, the new text goes through a hidden
temporary file beside the contract (never a ``*.yaml`` discovery would read, never another
filesystem), a failed write leaves nothing behind and raises its own error, and an edit that would
change the data beyond the status and the new entry is refused even where the binding digest
does not see the difference."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pv import promote
from pv.promote import PromoteError, apply, decide
from tests.pv.evidence.conftest import CONTRACT, Project, Writer, all_survive


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_entry_is_dated_today_in_utc(project: Project, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)

    class Clock:
        @staticmethod
        def now(tz: dt.tzinfo | None = None) -> dt.datetime:
            # 23:30 on 2 March in UTC is already 3 March east of it
            return dt.datetime(2026, 3, 2, 23, 30, tzinfo=dt.UTC) if tz is dt.UTC else dt.datetime(2026, 3, 3, 8, 30)

    monkeypatch.setattr(promote, "_dt", SimpleNamespace(datetime=Clock, UTC=dt.UTC, date=dt.date))
    new = apply(decision, None, project.root)
    assert 'date: "2026-03-02"' in new and "2026-03-03" not in new


def test_the_new_text_goes_through_a_hidden_file_beside_the_contract(
    project: Project, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    moves: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        moves.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    apply(decision, dt.date(2026, 3, 2), project.root)
    [(src, dst)] = moves
    assert dst == project.contract.resolve()
    assert src.parent == dst.parent  # one filesystem: the rename is atomic
    assert src.name.startswith(f".{dst.name}.") and src.name.endswith(".pv-promote")
    assert not src.exists()


@pytest.mark.parametrize("unlink_fails", [False, True], ids=["cleaned", "cleanup-fails-too"])
def test_a_failed_write_leaves_the_contract_and_raises_its_own_error(
    project: Project, write: Writer, monkeypatch: pytest.MonkeyPatch, unlink_fails: bool
) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    before = _listing(project.contract.parent)
    real_unlink = os.unlink

    def replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    def unlink(path: Any) -> None:
        real_unlink(path)
        if unlink_fails:
            raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(OSError) as failed:
        apply(decision, dt.date(2026, 3, 2), project.root)
    assert (failed.type, failed.value.errno) == (OSError, 28)
    assert _listing(project.contract.parent) == before
    assert project.contract.read_text(encoding="utf-8") == CONTRACT


def test_an_edit_that_moves_an_alias_in_an_old_entry_is_refused(project: Project, write: Writer) -> None:
    # the status anchored and aliased in an old entry that names its evidence: the binding digest
    # leaves such an entry out, so only the comparison with the expected data sees it change
    aliased = CONTRACT.replace("  status: DRAFT         # written by pv promote\n", "  status: &s DRAFT\n", 1).replace(
        '    - {version: 1.0.0, date: "2026-01-01", change: initial}\n',
        '    - {version: 1.0.0, date: "2026-01-01", change: *s, evidence: old}\n',
        1,
    )
    assert aliased.count("*s") == 1
    project.contract.write_text(aliased, encoding="utf-8")
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    with pytest.raises(PromoteError, match="pv cannot place its edit in this file's layout without changing something"):
        apply(decision, dt.date(2026, 3, 2), project.root)
    assert project.contract.read_text(encoding="utf-8") == aliased
