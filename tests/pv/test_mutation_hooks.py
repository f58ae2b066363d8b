"""``--pv-mutation-log``: under a mutation tool, each run logs which falsifiers failed under its mutant."""

from __future__ import annotations

import json
import os
from pathlib import Path

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
    # the kill carries what failed, so that one that does not reproduce can be traced; the survivor nothing
    why = json.loads((two.root / "log.jsonl").read_text())["why"]
    assert list(why) == ["alpha::FALSIFY-ALPHA-001"]
    assert "value == 1.0" in why["alpha::FALSIFY-ALPHA-001"]  # the expect and the values, not the prediction
    assert "prediction:" not in why["alpha::FALSIFY-ALPHA-001"]


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


def test_under_a_mutant_its_earlier_killers_run_first(two: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = two.pytester.runpytest("--collect-only", "-q", "-p", "no:randomly").outlines
    node = {line.rsplit("-", 1)[1]: line for line in ids if "::FALSIFY-" in line}
    durations = {node["001"]: 9.0, node["002"]: 0.5, node["003"]: 2.0}
    (two.root / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": durations}))
    hints = {"toysystem.x_system_value__mutmut_1": [node["001"]], "toysystem.x_other__mutmut_1": [node["003"]]}
    (two.root / "pv-mutation-hints.json").write_text(json.dumps(hints))
    run = ("-v", "-p", "no:randomly", "--pv-mutation-log", "log.jsonl")
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    assert _order(two.pytester.runpytest(*run)) == ["FALSIFY-ALPHA-001", "FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003"]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_2")  # no hint: fastest first
    assert _order(two.pytester.runpytest(*run)) == ["FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003", "FALSIFY-ALPHA-001"]
    (two.root / "mutmut-stats.json").unlink()  # hints alone, the rest in pytest's order
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_other__mutmut_1")
    assert _order(two.pytester.runpytest(*run)) == ["FALSIFY-ALPHA-003", "FALSIFY-ALPHA-001", "FALSIFY-ALPHA-002"]
    (two.root / "pv-mutation-hints.json").write_text("[not hints]")
    assert _order(two.pytester.runpytest(*run)) == ["FALSIFY-ALPHA-001", "FALSIFY-ALPHA-002", "FALSIFY-ALPHA-003"]


def test_under_a_mutant_the_falsifiers_it_survived_unchanged_are_skipped(
    two: ToyProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = two.pytester.runpytest("--collect-only", "-q", "-p", "no:randomly").outlines
    node = {line.rsplit("-", 1)[1]: line for line in ids if "::FALSIFY-" in line}
    skips = {
        "toysystem.x_system_value__mutmut_1": [node["001"], node["003"]],
        "toysystem.x_other__mutmut_1": list(node.values()),
    }
    (two.root / "pv-mutation-skips.json").write_text(json.dumps(skips))
    run = ("-v", "-p", "no:randomly", "--pv-mutation-log", "log.jsonl")
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    result = two.pytester.runpytest(*run)
    assert _order(result) == ["FALSIFY-ALPHA-002"]
    result.assert_outcomes(passed=1, deselected=2)
    logged = [json.loads(line) for line in (two.root / "log.jsonl").read_text().splitlines()]
    assert [sorted(r["verdicts"]) for r in logged] == [["alpha::FALSIFY-ALPHA-002"]]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_other__mutmut_1")  # every one named: all run
    assert len(_order(two.pytester.runpytest(*run))) == 3
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")  # mutmut's own runs skip nothing
    assert len(_order(two.pytester.runpytest(*run))) == 3
    monkeypatch.setenv("MUTANT_UNDER_TEST", "toysystem.x_system_value__mutmut_1")
    (two.root / "pv-mutation-skips.json").write_text("[not skips]")
    assert len(_order(two.pytester.runpytest(*run))) == 3


CHILD_CHECKER = """
import subprocess, sys
from pv.checkers import checker

CHILD = "from mutmut.state import state; state()._stats.add('toysystem.x_only_in_a_child')"


@checker(observes=["exit_code"])
def in_a_child():
    return {"exit_code": subprocess.run([sys.executable, "-c", CHILD], check=False).returncode}
"""
FAKE_STATE = """
class _State:
    def __init__(self):
        self._stats = set()


_S = _State()


def state():
    return _S
"""
# stands in for mutmut's own teardown hook, which files the running test's functions
RECORDER_PLUGIN = """
import json, pytest
from mutmut.state import state


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    with open("seen.jsonl", "a") as fh:
        fh.write(json.dumps({"test": item.name, "functions": sorted(state()._stats)}) + "\\n")
    state()._stats.clear()
"""


@pytest.mark.parametrize("mutant", ["stats", "engine.x_f__mutmut_1"])
def test_functions_a_child_process_calls_count_for_the_test_that_started_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mutant: str
) -> None:
    from tests.pv.toy import build_toy

    toy = build_toy(pytester, addopts="--pv-no-evidence", checkers={"child": CHILD_CHECKER})
    toy.contract("kid", [falsifier("FALSIFY-KID-001", check="toyfalsifiers.child:in_a_child", expect="exit_code == 0")])
    toy.contract("plain", [falsifier("FALSIFY-PLAIN-001", check=CHECK + "measure", expect="value == 1.0")])
    toy.write("fake/mutmut/__init__.py", "")
    toy.write("fake/mutmut/state.py", FAKE_STATE)
    toy.write("fake/recorder_plugin.py", RECORDER_PLUGIN)
    (toy.root / "hits").mkdir()
    (toy.root / "hits" / "99999.hits").write_text("toysystem.x_left_by_a_killed_child\n")  # before this run
    site = Path(__file__).resolve().parents[2] / "scripts" / "mutation" / "mutmut_site"
    env = {"MUTANT_UNDER_TEST": mutant, "PV_MUTMUT_CHILD_HITS": str(toy.root / "hits")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(toy.root / "fake"), str(toy.root)])
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = pytester.runpytest_subprocess("-p", "recorder_plugin", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    seen = {r["test"]: r["functions"] for r in map(json.loads, (toy.root / "seen.jsonl").read_text().splitlines())}
    if mutant == "stats":
        assert seen == {"FALSIFY-KID-001": ["toysystem.x_only_in_a_child"], "FALSIFY-PLAIN-001": []}
    else:  # a mutant's run: children record nothing and nothing is merged
        assert seen == {"FALSIFY-KID-001": [], "FALSIFY-PLAIN-001": []}
    assert list((toy.root / "hits").iterdir()) == ([] if mutant == "stats" else [toy.root / "hits" / "99999.hits"])


def test_merging_child_hits_consumes_the_files(tmp_path: Path) -> None:
    from pv.mutation_hooks import merge_child_hits

    (tmp_path / "1.hits").write_text("a.x_f\na.x_g\n")
    (tmp_path / "2.hits").write_text("a.x_g\n\n")
    (tmp_path / "notes.txt").write_text("not a hits file")
    into = {"a.x_f"}
    assert merge_child_hits(tmp_path, into) == 1
    assert into == {"a.x_f", "a.x_g"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def _hit_in_child() -> int:
    from mutmut.state import state

    state()._stats.add("pv.demo.x_reached_in_the_child")
    return 1


@pytest.mark.parametrize("mode", ["stats", "pv.demo.x_f__mutmut_1"])
def test_a_forked_checker_leaves_what_it_reached_for_the_test_that_ran_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    pytest.importorskip("mutmut")
    from pv.run_checker import call_in_process

    monkeypatch.setenv("MUTANT_UNDER_TEST", mode)
    monkeypatch.setenv("PV_MUTMUT_CHILD_HITS", str(tmp_path))
    outcome = call_in_process(_hit_in_child, {}, timeout_s=60)
    assert outcome.value == 1, outcome
    hits = sorted(tmp_path.glob("*.hits"))
    if mode == "stats":  # only mutmut's stats run asks which functions a test reaches
        # one file per process that reached something: the checker's, and under mutmut the reaper's too
        assert any("pv.demo.x_reached_in_the_child" in h.read_text().split() for h in hits), hits
    else:
        assert hits == []
