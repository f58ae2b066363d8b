"""verify names every difference in the code a bundle measured, comma-separated: each package when
the bundle measured several, each file edited since the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pv.evidence.code_binding import CodeScope
from pv.evidence.verify import verify_bundle
from pv.evidence.writer import write_run
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def _bundle(project: Project, scope: CodeScope) -> Path:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    measured = scope.snapshot(project.contract, {})
    run.contracts["demo-v1"] = dataclasses.replace(run.contracts["demo-v1"], code=measured)
    [written] = write_run(run, project.evidence, project.root, ENV, scope=scope)
    assert written.path is not None
    return written.path


def _system(project: Project) -> CodeScope:
    (project.root / "system").mkdir()
    for name in ("a.py", "b.py"):
        (project.root / "system" / name).write_text("X = 1\n")
    return CodeScope(project.root, ("falsifiers",), ("system",))


def test_every_file_edited_since_the_run_is_named(project: Project) -> None:
    scope = _system(project)
    bundle = _bundle(project, scope)
    assert verify_bundle(bundle, scope=scope).problems == []
    for name in ("a.py", "b.py"):
        (project.root / "system" / name).write_text("X = 2\n")
    [problem] = verify_bundle(bundle, scope=scope).problems
    assert problem.detail == "code changed since the run: changed system/a.py, changed system/b.py"


def test_every_package_the_bundle_measured_is_named(project: Project) -> None:
    bundle = _bundle(project, _system(project))
    [problem] = verify_bundle(bundle, scope=CodeScope(project.root, ("falsifiers",), ())).problems
    assert problem.detail == "code changed: measured over packages falsifiers, system, the project's are falsifiers"
