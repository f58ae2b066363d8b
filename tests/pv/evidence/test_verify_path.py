"""verify_path over a whole evidence folder: each bundle judged against its own contract, found
where the run recorded it, however the folders are laid out."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

import pytest

from pv.config import load_config
from pv.evidence.code_binding import CodeScope
from pv.evidence.verify import BundleReport, verify_path
from pv.evidence.writer import write_run
from pv.project import Project as PvProject
from pv.results import ContractRun, RunRecord
from tests.pv.evidence.conftest import CONTRACT, ENV, IDS, SHIP, Project, Writer, all_survive


def _second_contract(project: Project) -> Path:
    """``other-v1``: the demo contract under another id, in its own file."""
    path = project.root / "contracts" / "other-v1.yaml"
    path.write_text(CONTRACT.replace("id: demo-v1", "id: other-v1"), encoding="utf-8")
    results = [dataclasses.replace(r, contract_id="other-v1") for r in all_survive()]
    run = ContractRun(
        contract_id="other-v1",
        path="contracts/other-v1.yaml",
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        version="1.0.0",
        status="DRAFT",
        declared=list(IDS),
        ship_blocking=list(SHIP),
    )
    record = RunRecord(
        run_id="session-2",
        started_at="2026-03-02T10:00:00.000001+00:00",
        finished_at="2026-03-02T10:00:05+00:00",
        contracts={"other-v1": run},
        results=results,
        mutants_enabled=True,
        selection="ship_blocking",
    )
    [outcome] = write_run(record, project.evidence, project.root, ENV)
    assert outcome.path is not None
    return outcome.path


def _by_contract(reports: list[BundleReport]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in reports:
        assert r.bundle is not None
        out.setdefault(r.bundle.contract.id, []).extend(p.detail for p in r.problems)
    return out


def test_each_bundle_is_judged_against_its_own_contract(project: Project, write: Writer) -> None:
    write(all_survive())
    _second_contract(project)
    assert _by_contract(verify_path(project.evidence)) == {"demo-v1": [], "other-v1": []}
    # the second contract edited without a bump: its bundle alone is stale, the first still verifies
    other = project.root / "contracts" / "other-v1.yaml"
    other.write_text(other.read_text().replace("step0_loss <= 3.0", "step0_loss <= 2.0"), encoding="utf-8")
    got = _by_contract(verify_path(project.evidence))
    assert got["demo-v1"] == []
    assert got["other-v1"] == ["contract edited since the run without a version bump"]
    # and the other way round: the first edited, the second as it was
    other.write_text(CONTRACT.replace("id: demo-v1", "id: other-v1"), encoding="utf-8")
    project.contract.write_text(CONTRACT.replace("step0_loss <= 3.0", "step0_loss <= 2.0"), encoding="utf-8")
    got = _by_contract(verify_path(project.evidence))
    assert got == {"demo-v1": ["contract edited since the run without a version bump"], "other-v1": []}


def test_a_bundle_whose_contract_file_is_gone_is_stale_among_good_ones(project: Project, write: Writer) -> None:
    write(all_survive())
    _second_contract(project)
    (project.root / "contracts" / "other-v1.yaml").unlink()
    reports = verify_path(project.evidence)
    assert _by_contract(reports) == {"demo-v1": [], "other-v1": ["contract file not found"]}
    assert [r.status for r in reports if r.bundle and r.bundle.contract.id == "other-v1"] == ["stale"]


def test_evidence_kept_outside_the_project_is_bound_through_the_given_root(
    project: Project, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(all_survive())
    _second_contract(project)
    elsewhere = tmp_path / "archive" / "kept" / "evidence"
    shutil.copytree(project.evidence, elsewhere)
    monkeypatch.chdir(tmp_path / "archive")  # neither the evidence folder's parent nor the cwd is the root
    assert _by_contract(verify_path(elsewhere, root=project.root)) == {"demo-v1": [], "other-v1": []}
    without = _by_contract(verify_path(elsewhere))
    assert without == {"demo-v1": ["contract file not found"], "other-v1": ["contract file not found"]}


def test_the_code_scope_is_the_given_projects_not_the_one_on_disk(project: Project, write: Writer) -> None:
    write(all_survive())
    on_disk = load_config(project.root)
    assert _by_contract(verify_path(project.evidence, project=PvProject(on_disk))) == {"demo-v1": []}
    # a command whose settings name other checker packages than the folder's own: judged by its own
    elsewhere = dataclasses.replace(on_disk, checker_packages=("elsewhere_checkers",))
    [problems] = _by_contract(verify_path(project.evidence, project=PvProject(elsewhere))).values()
    assert len(problems) == 1 and problems[0].startswith("code changed: measured over packages")
    assert "elsewhere_checkers" in problems[0]
    # an explicit scope wins over the project's
    scoped = verify_path(project.evidence, project=PvProject(elsewhere), scope=CodeScope.of(on_disk))
    assert _by_contract(scoped) == {"demo-v1": []}
