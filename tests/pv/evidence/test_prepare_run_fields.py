"""What a bundle takes from its run record: the selection, the settings only when the run recorded
them (never defaults presented as what the run did), a result for a falsifier the contract does not
declare, and a run id kept apart from another run's even on the same clock and pid."""

from __future__ import annotations

import dataclasses
import datetime as dt
from types import SimpleNamespace

import pytest

from pv.evidence import writer
from pv.evidence.writer import prepare
from pv.results import RunRecord, Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, record, result


def _prepare(project: Project, run: RunRecord) -> writer.Prepared:
    return prepare(run, run.contracts["demo-v1"], project.contract.read_bytes(), project.root, ENV)


def test_the_selection_and_settings_come_from_the_run(project: Project) -> None:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    run.settings = {"isolation": "process", "workers": 2}
    bundle = _prepare(project, run).bundle
    assert bundle.selection == "ship_blocking"
    assert bundle.settings is not None and (bundle.settings.isolation, bundle.settings.workers) == ("process", 2)


def test_a_run_that_recorded_no_settings_claims_none(project: Project) -> None:
    run = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    assert run.settings == {}
    assert _prepare(project, run).bundle.settings is None


def test_a_result_for_an_undeclared_falsifier_gets_its_entry(project: Project) -> None:
    stray = dataclasses.replace(result("FALSIFY-DEMO-009", Verdict.FALSIFIED), ship_blocking=False)
    bundle = _prepare(project, record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED), stray])).bundle
    assert [e.id for e in bundle.falsifiers] == [*IDS, "FALSIFY-DEMO-009"]
    extra = bundle.falsifiers[-1]
    assert (extra.verdict, extra.selected, extra.ship_blocking) == ("falsified", True, False)


class _FrozenClock(dt.datetime):
    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _FrozenClock:
        return cls(2026, 3, 1, 10, 0, 0, tzinfo=tz)


def test_two_runs_on_one_clock_and_pid_get_different_run_ids(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two machines (containers: the same pid) starting in the same microsecond: only what the run
    # and the contract are keeps their bundles' ids apart.
    monkeypatch.setattr(writer, "_dt", SimpleNamespace(datetime=_FrozenClock, UTC=dt.UTC))
    monkeypatch.setattr(writer.os, "getpid", lambda: 1)
    first = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    second = dataclasses.replace(first, run_id="session-2")
    ids = [_prepare(project, run).bundle.run_id for run in (first, first, second)]
    assert ids[0] == ids[1] != ids[2]
    assert ids[0][:22] == ids[2][:22] == "20260301T100000000001Z"
