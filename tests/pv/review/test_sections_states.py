"""The review's sections (``pv.review.sections.build``) for each state a contract's evidence can be
in, built in this process from evidence the plugin wrote: promoted, retired, a status pv cannot
read, a stale newest bundle, bundles the ledger does not record, and recorded bundles tampered with.
Each section says what the status would become and why, and lists the rows of the bundles counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pv.project import Project
from pv.review.sections import Section, build
from tests.pv.review.helpers import means_project


def _section(root: Path) -> Section:
    (section,) = build(Project.open(root), [root / "contracts" / "mean-v1.yaml"]).sections
    return section


def _bundles(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "evidence" / "mean-v1").iterdir() if p.is_dir())


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """The means project with one run's evidence (both falsifiers survive)."""
    means_project(pytester, "value >= 1", "true")
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    return pytester.path


def _set_status(root: Path, status: str) -> None:
    contract = root / "contracts" / "mean-v1.yaml"
    text = contract.read_text()
    contract.write_text(text.replace("version: 1.0.0,", f"version: 1.0.0, status: {status},"))


def test_a_backed_contract_is_promoted_from_its_bundle_and_shows_its_rows(project: Path) -> None:
    (run,) = _bundles(project)
    section = _section(project)
    where = f"evidence/mean-v1/{run}"
    assert (section.before, section.after, section.reason) == ("DRAFT", "ACTIVE", f"promoted from {where}")
    assert (section.bundle, section.sources, section.declared) == (where, [where], 2)
    assert [(row.id, row.verdict, row.source) for row in section.rows] == [
        ("FALSIFY-MEAN-001", "survived", run),
        ("FALSIFY-MEAN-002", "survived", run),
    ]
    assert [e.id for e in section.entries] == ["FALSIFY-MEAN-001", "FALSIFY-MEAN-002"]


def test_a_retired_contract_is_left_alone_and_still_shows_its_evidence(project: Path) -> None:
    (run,) = _bundles(project)
    _set_status(project, "RETIRED")
    section = _section(project)
    where = f"evidence/mean-v1/{run}"
    assert (section.before, section.after, section.reason) == ("RETIRED", "RETIRED", "retired: left alone")
    assert (section.bundle, section.sources) == (where, [where])
    assert [(row.id, row.verdict, row.source) for row in section.rows] == [
        ("FALSIFY-MEAN-001", "survived", run),
        ("FALSIFY-MEAN-002", "survived", run),
    ]


def test_a_status_pv_does_not_know_is_shown_as_unknown_with_the_refusal_and_the_evidence(project: Path) -> None:
    (run,) = _bundles(project)
    _set_status(project, "BOGUS")
    section = _section(project)
    assert (section.before, section.after) == ("?", "?")
    path = project / "contracts" / "mean-v1.yaml"
    assert section.reason.startswith(f"{path}: metadata.status 'BOGUS' is not a status pv knows; set it to one of ")
    assert section.sources == [f"evidence/mean-v1/{run}"]
    assert [row.id for row in section.rows] == ["FALSIFY-MEAN-001", "FALSIFY-MEAN-002"]


def test_a_stale_newest_bundle_is_named_with_its_problem_and_counts_nothing(project: Path) -> None:
    (project / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)  # edited\n")
    section = _section(project)
    assert (section.before, section.after, section.bundle) == ("DRAFT", "DRAFT", None)
    assert (
        section.reason == "newest bundle is stale: stale: code: code changed since the run: changed mysystem/stats.py"
    )
    assert (section.rows, section.sources, section.entries) == ([], [], [])


def test_bundles_the_ledger_does_not_record_are_ignored_and_the_reason_says_so(project: Path) -> None:
    (project / "evidence" / "mean-v1" / "ledger.jsonl").unlink()
    section = _section(project)
    assert (section.after, section.bundle, section.rows) == ("DRAFT", None, [])
    assert section.reason == (
        "not recorded in ledger.jsonl: a bundle pv did not write here, or one written before the ledger "
        "(`pv evidence ledger adopt` takes those in)"
    )


def test_every_recorded_bundle_tampered_with_blocks_the_evidence_and_is_named(
    project: Path, pytester: pytest.Pytester
) -> None:
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    runs = _bundles(project)
    assert len(runs) == 2
    for run in runs:
        bundle = project / "evidence" / "mean-v1" / run / "bundle.json"
        data = json.loads(bundle.read_text())
        data["falsifiers"][0]["verdict"] = "falsified"
        bundle.write_text(json.dumps(data))
    section = _section(project)
    assert (section.before, section.after, section.bundle, section.rows, section.sources) == (
        "DRAFT", "DRAFT", None, [], [],
    )  # fmt: skip
    tampered = "is tampered: bundle.json: sha256 does not match the manifest"
    assert section.reason == "evidence blocked: " + "; ".join(f"bundle {run} {tampered}" for run in runs)


def test_a_contract_without_evidence_says_so(pytester: pytest.Pytester) -> None:
    means_project(pytester, "value >= 1", "true")
    section = _section(pytester.path)
    assert (section.before, section.after, section.bundle, section.reason) == ("DRAFT", "DRAFT", None, "no evidence")
    assert (section.rows, section.sources, section.declared) == ([], [], 2)


def test_a_contract_that_does_not_load_is_shown_as_unknown_with_nothing_declared(project: Path) -> None:
    contract = project / "contracts" / "mean-v1.yaml"
    contract.write_text("metadata: {id: mean-v1, version: 1.0.0\nfalsification_tests: [\n")
    section = _section(project)
    assert (section.contract_id, section.before, section.after, section.declared) == ("mean-v1", "?", "?", 0)
    # promote's refusal gives way to why no bundle counts: the newest no longer fits a contract that loads
    stale = "newest bundle is stale: stale: contracts/mean-v1.yaml: contract no longer loads: PV004 YAML syntax error: "
    assert section.reason.startswith(stale) and (section.rows, section.sources) == ([], [])


def test_falsifiers_that_are_not_a_list_count_as_none_declared(project: Path) -> None:
    contract = project / "contracts" / "mean-v1.yaml"
    contract.write_text("metadata: {id: mean-v1, version: 1.0.0, description: means}\nfalsification_tests: {}\n")
    assert _section(project).declared == 0
