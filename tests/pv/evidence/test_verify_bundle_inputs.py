"""verify_bundle's inputs each decide something: a ``contract_file`` that is not there is "contract
file not found" (not a contract read from nowhere); ``root`` finds the recorded contract of a
bundle kept away from the project, from any folder; ``scope`` is the code the bundle must be
bound to, not the configuration's."""

from __future__ import annotations

import shutil

import pytest

from pv.evidence.code_binding import CodeScope
from pv.evidence.verify import BundleReport, verify_bundle
from tests.pv.evidence.conftest import Project, Writer, all_survive


def _problems(report: BundleReport) -> list[tuple[str, str, str]]:
    return [(p.kind, p.file, p.detail) for p in report.problems]


def test_a_contract_file_that_is_not_there_is_not_found(write: Writer, project: Project) -> None:
    bundle = write(all_survive())
    report = verify_bundle(bundle, contract_file=project.root / "contracts" / "gone-v1.yaml")
    assert _problems(report) == [("stale", "contracts/demo-v1.yaml", "contract file not found")]
    assert verify_bundle(bundle, contract_file=project.contract).problems == []


def test_root_finds_the_contract_of_a_bundle_kept_elsewhere_from_any_folder(
    write: Writer, project: Project, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(all_survive())
    away = tmp_path_factory.mktemp("archive") / "evidence" / "demo-v1" / bundle.name
    shutil.copytree(bundle, away)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    assert verify_bundle(away, root=project.root).problems == []
    assert _problems(verify_bundle(away)) == [("stale", "contracts/demo-v1.yaml", "contract file not found")]


def test_the_scope_given_is_the_code_the_bundle_must_be_bound_to(write: Writer, project: Project) -> None:
    bundle = write(all_survive())
    governing = CodeScope.governing(project.root)
    assert verify_bundle(bundle, scope=governing).problems == []
    other = CodeScope(project.root, governing.checker_packages, ("system",))
    [(kind, file, detail)] = _problems(verify_bundle(bundle, scope=other))
    assert (kind, file) == ("stale", "code") and detail.startswith("code changed: measured over packages ")
    assert detail.endswith(f"the project's are {', '.join(other.packages)}")
