"""assess on the paths the plain cases do not take: a pruned bundle whose folder is back, stale
bundles listed newest first, a committed ledger deleted with its bundles left, and two copies of
a contract where the one asked about is the one judged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pv.evidence import ledger
from pv.evidence.status import assess
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer
from tests.pv.evidence.test_ledger_history_paths import Repo
from tests.pv.evidence.test_status import bundle_for

DAY1, DAY2 = "2026-03-01T10:00:00+00:00", "2026-03-02T10:00:00+00:00"


def _edit_a_claim(contract: Path) -> None:
    """A bound changed without a version bump: every earlier bundle is stale."""
    contract.write_text(contract.read_text().replace("step0_loss <= 3.0", "step0_loss <= 2.5"))


def test_a_pruned_bundle_whose_folder_is_back_is_ignored_and_the_next_still_counts(
    project: Project, write: Writer
) -> None:
    older = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY1)
    newer = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY2)
    with ledger.locked(older.parent) as chain:
        entry = chain.recorded()[older.name]
        ledger.append(chain, "pruned", older.name, entry.digest, verdicts=entry.verdicts)
    found = assess(project.evidence, project.contract)
    assert found.ignored == {older: "recorded in ledger.jsonl as pruned"}
    assert [r.path for r in found.counted] == [newer] and found.bundle_path == newer


def test_stale_bundles_are_listed_newest_first(project: Project, write: Writer) -> None:
    older = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY1)
    newer = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY2)
    _edit_a_claim(project.contract)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT and found.counted == []
    assert [(r.path, r.status) for r in found.rejected] == [(newer, "stale"), (older, "stale")]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_committed_ledger_deleted_with_its_bundles_left_blocks(project: Project, write: Writer) -> None:
    bundle = bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY1)
    Repo(project.root).commit("evidence")
    (bundle.parent / ledger.LEDGER_FILE).unlink()
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT
    assert len(found.blocked) == 1 and f"the working tree removed the line of bundle {bundle.name}" in found.blocked[0]


def test_the_contract_asked_about_is_judged_not_the_first_file_its_recorded_path_finds(
    project: Project, write: Writer, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle_for(write, Verdict.SURVIVED, Verdict.SURVIVED, started=DAY1)
    elsewhere = tmp_path_factory.mktemp("checkout")  # another copy of the project, the one asked about
    (elsewhere / "contracts").mkdir()
    asked = elsewhere / "contracts" / project.contract.name
    shutil.copy(project.contract, asked)
    _edit_a_claim(project.contract)  # the copy beside the evidence, which its recorded path finds first
    monkeypatch.chdir(elsewhere)
    found = assess(project.evidence, asked)
    assert found.rejected == [] and len(found.counted) == 1
    monkeypatch.chdir(os.sep)
    assert assess(project.evidence, project.contract).counted == []  # the edited copy: its bundle is stale
