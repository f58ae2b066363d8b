"""Every field of the decision ``decide`` returns, on each of its paths (retired, blocked,
unchanged, held below ACTIVE, promoted, demoted): the contract's path, id and version, the
statuses, the reason in full with every cause joined, and the bytes and data it read; a decision
taken without a root names its bundle by its absolute path, and a reading the caller passes is
used only while the file still has its bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pv.model import Status
from pv.project import ProjectContract
from pv.promote import Decision, PromoteError, apply, decide
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer, all_survive, result

F, S, K = Verdict.FALSIFIED, Verdict.SURVIVED, Verdict.SKIPPED
DAY = __import__("datetime").date(2026, 3, 2)


def _who(decision: Decision, project: Project) -> tuple[Path, str, str]:
    return decision.path, decision.contract_id, decision.version


def _read(project: Project) -> tuple[bytes, object]:
    raw = project.contract.read_bytes()
    return raw, yaml.safe_load(raw)


def test_a_retired_contract_is_left_alone_by_name(project: Project) -> None:
    project.contract.write_text(project.contract.read_text().replace("status: DRAFT ", "status: RETIRED"))
    d = decide(project.contract, project.evidence, project.root)
    assert _who(d, project) == (project.contract, "demo-v1", "1.0.0")
    assert (d.current, d.target, d.reason, d.assessment, d.raw, d.data) == (
        Status.RETIRED,
        Status.RETIRED,
        "retired: left alone",
        None,
        None,
        None,
    )


def test_blocked_evidence_names_every_cause(project: Project, write: Writer) -> None:
    first = write(all_survive(), started="2026-03-01T10:00:00+00:00")
    second = write(all_survive(), started="2026-03-02T10:00:00+00:00")
    for bundle in (first, second):
        (bundle / "statement.intoto.json").write_text("{}\n")
    d = decide(project.contract, project.evidence, project.root)
    assert d.assessment is not None and len(d.assessment.blocked) >= 2
    assert _who(d, project) == (project.contract, "demo-v1", "1.0.0")
    assert (d.current, d.target) == (Status.DRAFT, Status.DRAFT)
    assert d.reason == "blocked: " + "; ".join(d.assessment.blocked)


def test_an_unchanged_decision_carries_what_it_read(project: Project, write: Writer) -> None:
    write(all_survive())
    apply(decide(project.contract, project.evidence, project.root), DAY, project.root)
    d = decide(project.contract, project.evidence, project.root)
    raw, data = _read(project)
    assert _who(d, project) == (project.contract, "demo-v1", "1.0.0")
    assert (d.current, d.target, d.reason, d.raw) == (Status.ACTIVE, Status.ACTIVE, "unchanged", raw)
    assert d.data == data


def test_an_active_contract_with_an_advisory_failure_is_unchanged(project: Project, write: Writer) -> None:
    write(all_survive(), started="2026-03-01T10:00:00+00:00")
    apply(decide(project.contract, project.evidence, project.root), DAY, project.root)
    advisory = [
        result("FALSIFY-DEMO-001", S),
        result("FALSIFY-DEMO-002", S),
        result("FALSIFY-DEMO-003", F, mutant=None),
    ]
    write(advisory, started="2026-03-05T10:00:00+00:00")
    d = decide(project.contract, project.evidence, project.root)
    assert (d.current, d.target, d.reason) == (Status.ACTIVE, Status.ACTIVE, "unchanged")


def test_a_promotion_names_its_contract_and_bundle(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    d = decide(project.contract, project.evidence, project.root)
    raw, data = _read(project)
    assert _who(d, project) == (project.contract, "demo-v1", "1.0.0")
    assert (d.current, d.target, d.reason, d.raw) == (
        Status.DRAFT,
        Status.ACTIVE,
        f"promoted from {bundle.relative_to(project.root).as_posix()}",
        raw,
    )
    assert d.data == data


def test_without_a_root_the_bundle_is_named_by_its_absolute_path(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    d = decide(project.contract, project.evidence)
    assert d.reason == f"promoted from {Path(os.path.abspath(bundle)).as_posix()}"


def test_a_demotion_joins_every_falsified_ship_blocker(project: Project, write: Writer) -> None:
    write(all_survive(), started="2026-03-01T10:00:00+00:00")
    apply(decide(project.contract, project.evidence, project.root), DAY, project.root)
    failing = [result("FALSIFY-DEMO-001", F, mutant=None), result("FALSIFY-DEMO-002", F, mutant=None)]
    failing[0].message, failing[1].message = "loss(=4.2) <= 3.0 is false", "loss(=5.0) <= 3.0 is false: on GPU"
    newer = write(failing, started="2026-03-05T10:00:00+00:00")
    d = decide(project.contract, project.evidence, project.root)
    raw, data = _read(project)
    assert d.assessment is not None and len(d.assessment.falsified) == 2
    why = "; ".join(r for r in d.assessment.reasons if r.split(":", 1)[0] in d.assessment.falsified)
    assert why.count("; ") >= 1
    assert _who(d, project) == (project.contract, "demo-v1", "1.0.0")
    assert (d.current, d.target, d.raw) == (Status.ACTIVE, Status.DRAFT, raw) and d.data == data
    assert d.reason == f"demoted: {why} ({newer.relative_to(project.root).as_posix()})"


def test_a_demotion_without_evidence_says_so_and_names_no_bundle(project: Project) -> None:
    project.contract.write_text(project.contract.read_text().replace("status: DRAFT ", "status: ACTIVE"))
    d = decide(project.contract, project.evidence, project.root)
    assert d.assessment is not None
    assert d.reason == f"demoted: {'; '.join(d.assessment.reasons) or 'no verified evidence'} (no bundle)"


def test_a_reading_the_caller_passes_is_used_only_while_the_file_has_its_bytes(project: Project, write: Writer) -> None:
    write(all_survive())
    before = ProjectContract.read(project.contract)
    project.contract.write_text(project.contract.read_text().replace("version: 1.0.0 ", "version: 1.0.1 ", 1))
    d = decide(project.contract, project.evidence, project.root, contract=before)
    assert d.version == "1.0.1" and d.raw == project.contract.read_bytes()


def test_metadata_that_is_not_a_mapping_is_refused_by_path(project: Project) -> None:
    project.contract.write_text(
        project.contract.read_text().replace("metadata:\n", "metadata: [x]\nold_metadata:\n", 1)
    )
    with pytest.raises(PromoteError) as refused:
        decide(project.contract, project.evidence, project.root)
    assert str(refused.value).startswith(f"{project.contract}: the contract has no `metadata:` mapping")


def test_a_status_held_below_active_joins_every_reason(project: Project, write: Writer) -> None:
    skip = result("FALSIFY-DEMO-002", K, skip_reason="no CUDA", skip_kind="hardware", mutant=None)
    write([result("FALSIFY-DEMO-001", Verdict.ERROR, mutant=None), skip])
    d = decide(project.contract, project.evidence, project.root)
    assert d.assessment is not None and len(d.assessment.reasons) >= 2 and not d.changed
    assert d.reason == "not ACTIVE: " + "; ".join(d.assessment.reasons)


def test_a_demotion_without_a_falsified_claim_joins_every_reason(project: Project, write: Writer) -> None:
    write(all_survive(), started="2026-03-01T10:00:00+00:00")
    apply(decide(project.contract, project.evidence, project.root), DAY, project.root)
    errors = [result(fid, Verdict.ERROR, mutant=None) for fid in ("FALSIFY-DEMO-001", "FALSIFY-DEMO-002")]
    newer = write(errors, started="2026-03-05T10:00:00+00:00")
    d = decide(project.contract, project.evidence, project.root)
    assert d.assessment is not None and not d.assessment.falsified and len(d.assessment.reasons) >= 2
    assert (d.current, d.target) == (Status.ACTIVE, Status.DRAFT)
    assert d.reason == f"demoted: {'; '.join(d.assessment.reasons)} ({newer.relative_to(project.root).as_posix()})"


def test_a_contract_without_a_version_is_decided_with_an_empty_one(project: Project) -> None:
    project.contract.write_text(
        project.contract.read_text().replace("  version: 1.0.0        # semver, checked by lint\n", "")
    )
    assert decide(project.contract, project.evidence, project.root).version == ""
