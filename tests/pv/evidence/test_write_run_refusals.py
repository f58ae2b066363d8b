"""Each contract a run cannot write evidence for is refused on its own: its outcome names it and
says why (its file gone, its file edited, its results inconsistent, the code it measured edited),
no bundle is written for it, and every contract sorted after it still gets its bundle."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from pv.evidence.code_binding import CodeScope
from pv.evidence.writer import Outcome, write_run
from pv.results import ContractRun, FalsifierResult, Verdict
from tests.pv.evidence.conftest import CONTRACT, ENV, Project, record, result


def _of(cid: str, fid: str = "FALSIFY-DEMO-001") -> FalsifierResult:
    return dataclasses.replace(result(fid, Verdict.SURVIVED), contract_id=cid)


def _contract(project: Project, cid: str) -> ContractRun:
    text = CONTRACT.replace("id: demo-v1", f"id: {cid}")
    path = project.root / "contracts" / f"{cid}.yaml"
    path.write_text(text, encoding="utf-8")
    base = project.contract_run()
    return dataclasses.replace(
        base, contract_id=cid, path=f"contracts/{cid}.yaml", sha256=hashlib.sha256(text.encode()).hexdigest()
    )


def test_each_refused_contract_is_named_and_every_later_one_is_written(project: Project) -> None:
    gone = _contract(project, "a-gone-v1")
    (project.root / gone.path).unlink()
    edited = _contract(project, "b-edited-v1")
    (project.root / edited.path).write_text(CONTRACT.replace("<= 3.0", "<= 30.0"), encoding="utf-8")
    twice = _contract(project, "c-twice-v1")
    run = record(
        project,
        [
            _of("a-gone-v1"),
            _of("b-edited-v1"),
            _of("c-twice-v1"),
            _of("c-twice-v1"),
            result("FALSIFY-DEMO-001", Verdict.SURVIVED),
        ],
    )
    run.contracts.update({c.contract_id: c for c in (gone, edited, twice)})

    outcomes = write_run(run, project.evidence, project.root, ENV)

    assert [o.contract_id for o in outcomes] == ["a-gone-v1", "b-edited-v1", "c-twice-v1", "demo-v1"]
    unreadable, changed, inconsistent, written = outcomes
    assert unreadable.path is None and unreadable.reason.startswith("contract file unreadable: ")
    assert str(project.root / gone.path) in unreadable.reason  # the OSError's own words follow
    assert changed == Outcome("b-edited-v1", None, "contract file changed during the run; no evidence written")
    assert inconsistent == Outcome("c-twice-v1", None, "c-twice-v1::FALSIFY-DEMO-001 reported twice in one run")
    assert written.path is not None and (written.path / "bundle.json").is_file()
    assert sorted(p.name for p in project.evidence.iterdir() if p.is_dir()) == ["demo-v1"]


def test_code_edited_during_the_run_is_refused_when_the_write_checks_it(project: Project) -> None:
    (project.root / "system").mkdir()
    core = project.root / "system" / "core.py"
    core.write_text("C = 1\n")
    scope = CodeScope(project.root, ("falsifiers",), ("system",))
    measured = scope.snapshot(project.contract, {})
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    run.contracts["demo-v1"] = dataclasses.replace(run.contracts["demo-v1"], code=measured)
    core.write_text("C = 2\n")  # the system under test edited while its falsifier ran

    [refused] = write_run(run, project.evidence, project.root, ENV, scope=scope)
    assert refused == Outcome(
        "demo-v1", None, "the code it measures changed during the run (changed system/core.py); no evidence written"
    )
    assert not project.evidence.exists() or not any(project.evidence.rglob("bundle.json"))

    # Without a scope (a journal recovered later) the code the run recorded is what it measured.
    [written] = write_run(run, project.evidence, project.root, ENV)
    assert written.path is not None
    assert json.loads((written.path / "bundle.json").read_text())["code"]["files"] == measured["files"]
