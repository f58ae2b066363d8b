"""A contract whose every bundle is ignored, each for its own reason, is shown with every reason,
once each, in a stable order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pv.project import Project
from pv.review.sections import build
from tests.pv.review.helpers import means_project


def test_every_reason_a_bundle_was_ignored_is_shown_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    means_project(pytester, "value >= 1", "true")
    monkeypatch.setenv("PV_FAULTS", "some_fault")  # the run's bundle is recorded, and is not evidence
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    evidence = pytester.path / "evidence" / "mean-v1"
    [bundle] = [p for p in evidence.iterdir() if p.is_dir()]
    for copy in ("copy-a", "copy-b"):  # two bundles the ledger does not record: one reason, shown once
        shutil.copytree(bundle, evidence / f"{bundle.name}-{copy}")
    root = Path(pytester.path)
    (section,) = build(Project.open(root), [root / "contracts" / "mean-v1.yaml"]).sections
    assert (section.after, section.rows) == ("DRAFT", [])
    assert section.reason == (
        "faults switched on for the whole run by PV_FAULTS: some_fault; not recorded in ledger.jsonl: a bundle pv "
        "did not write here, or one written before the ledger (`pv evidence ledger adopt` takes those in)"
    )
