"""Results for a contract the run never loaded get no bundle and an outcome that says why, and they
stop no other contract's bundle from being written."""

from __future__ import annotations

import dataclasses

from pv.evidence.writer import Outcome, write_run
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, Project, record, result


def test_results_for_an_unloaded_contract_are_named_and_the_rest_is_written(project: Project) -> None:
    stray = dataclasses.replace(result("FALSIFY-DEMO-001", Verdict.SURVIVED), contract_id="a-stray-v1")
    run = record(project, [stray, result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    outcomes = write_run(run, project.evidence, project.root, ENV)
    assert outcomes[0] == Outcome("a-stray-v1", None, "results for a contract the run did not load")
    assert [o.contract_id for o in outcomes[1:]] == ["demo-v1"]
    assert outcomes[1].path is not None and (outcomes[1].path / "bundle.json").is_file()
