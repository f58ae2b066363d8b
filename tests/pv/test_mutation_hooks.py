"""``--pv-mutation-log``: under a mutation tool, each run logs which falsifiers failed under its mutant."""

from __future__ import annotations

import json

import pytest

from pv.mutation import read_log
from tests.pv.toy import ToyProject, falsifier

CHECK = "toyfalsifiers.basic:"


@pytest.fixture
def two(toy: ToyProject) -> ToyProject:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0"),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "blind", expect="value == 1.0"),
            falsifier("FALSIFY-ALPHA-003", check=CHECK + "crash", expect="value == 1.0"),
        ],
    )
    return toy


def test_a_run_under_a_mutant_logs_every_verdict_under_its_name(
    two: ToyProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the toy system's fault stands in for the code change a mutation tool makes
    monkeypatch.setenv("PV_FAULTS", "off_by_one")
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    result = two.pytester.runpytest("--pv-mutation-log", "log.jsonl", "-k", "not ALPHA-003")
    result.assert_outcomes(failed=1, passed=1, deselected=1)
    assert read_log(two.root / "log.jsonl") == {
        "toysystem.x_system_value__mutmut_1": {
            "alpha::FALSIFY-ALPHA-001": "falsified",
            "alpha::FALSIFY-ALPHA-002": "survived",
        }
    }  # the deselected falsifier is not a survivor


def test_an_error_is_logged_as_an_error_and_the_id_option_wins_over_the_environment(
    two: ToyProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "from-env")
    two.pytester.runpytest("--pv-mutation-log", "log.jsonl", "--pv-mutant-id", "m7")
    line = json.loads((two.root / "log.jsonl").read_text())
    assert line["mutant"] == "m7"
    assert line["verdicts"]["alpha::FALSIFY-ALPHA-003"] == "error"


@pytest.mark.parametrize("name", ["", "fail", "stats", "list_all_tests"])
def test_runs_that_test_no_mutant_write_nothing(two: ToyProject, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", name)  # mutmut's clean, forced-fail, stats and listing runs
    two.pytester.runpytest("--pv-mutation-log", "log.jsonl")
    assert not (two.root / "log.jsonl").exists()


def test_without_the_option_nothing_is_logged(two: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "m1")
    two.pytester.runpytest()
    assert not list(two.root.glob("*.jsonl"))


def _order(result: pytest.RunResult) -> list[str]:
    return [line.split("::")[1].split()[0] for line in result.outlines if line.startswith("contracts/")]


def test_under_a_mutant_the_fastest_falsifiers_run_first(two: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _order(two.pytester.runpytest("-v", "-p", "no:randomly"))
    assert written == ["FALSIFY-ALPHA-001", "FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003"]
    ids = two.pytester.runpytest("--collect-only", "-q", "-p", "no:randomly").outlines
    node = {line.rsplit("-", 1)[1]: line for line in ids if "::FALSIFY-" in line}
    durations = {node["001"]: 9.0, node["002"]: 0.5, node["003"]: 2.0}
    (two.root / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": durations}))
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    ordered = _order(two.pytester.runpytest("-v", "-p", "no:randomly", "--pv-mutation-log", "log.jsonl"))
    assert ordered == ["FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003", "FALSIFY-ALPHA-001"]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")  # mutmut's own runs keep pytest's order
    assert _order(two.pytester.runpytest("-v", "-p", "no:randomly", "--pv-mutation-log", "log.jsonl")) == written
    (two.root / "mutmut-stats.json").write_text("{not json")
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    assert _order(two.pytester.runpytest("-v", "-p", "no:randomly", "--pv-mutation-log", "log.jsonl")) == written
