"""The ledger check names every recorded bundle that is wrong, not the first one only: one gone
does not hide a later one replaced, and one that did not verify does not hide a later one gone."""

from __future__ import annotations

import shutil
from pathlib import Path

from pv.bundle.model import MANIFEST_FILE
from pv.evidence import ledger
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer
from tests.pv.evidence.test_status import bundle_for


def _three(write: Writer) -> list[Path]:
    return [
        bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=f"2026-03-0{day}T10:00:00+00:00")
        for day in (1, 2, 3)
    ]


def test_a_gone_bundle_does_not_hide_a_later_one_replaced(project: Project, write: Writer) -> None:
    first, second, third = _three(write)
    shutil.rmtree(first)
    manifest = second / MANIFEST_FILE
    manifest.write_text(manifest.read_text() + "\n")  # the bundle edited after it was recorded
    chain = ledger.read(project.evidence / "demo-v1")
    folders = {p.name: p for p in (second, third)}
    found = ledger.check(chain, folders, {name: None for name in folders})
    assert [p.split(" (")[0] for p in found.problems] == [f"bundle {first.name}", f"bundle {second.name}"]
    assert "is gone" in found.problems[0] and "replaced or edited" in found.problems[1]


def test_a_bundle_that_did_not_verify_does_not_hide_a_later_one_gone(project: Project, write: Writer) -> None:
    first, second, third = _three(write)
    shutil.rmtree(third)
    chain = ledger.read(project.evidence / "demo-v1")
    found = ledger.check(chain, {first.name: first, second.name: second}, {first.name: None, second.name: None})
    assert len(found.problems) == 1 and found.problems[0].startswith(f"bundle {third.name} (ledger line 3) is gone")
