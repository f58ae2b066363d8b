"""scripts/mutation/judge.py's workspace: pv's core mutated, everything else of pv left alone."""

from __future__ import annotations

import importlib
import json
import tomllib
from pathlib import Path

import pytest

from tests.scripts_loader import load_script

judge = load_script("scripts/mutation/judge.py")
records_of = importlib.import_module("judge_records")  # as judge.py imported it (scripts/mutation on the path)


def test_only_the_judging_core_is_mutated() -> None:
    config = tomllib.loads(judge.settings())["tool"]["mutmut"]
    left_alone = set(config["do_not_mutate"])
    assert config["source_paths"] == ["pv/"] and config["pytest_add_cli_args_test_selection"] == [
        "tests/pv",
        "tests/security",
    ]
    assert "pv/plugin.py" in left_alone and "pv/loader.py" in left_alone
    for core in ("pv/expr.py", "pv/noise.py", "pv/promote.py", "pv/evidence/verify.py", "pv/review/compare.py"):
        assert core not in left_alone
    assert not [p for p in left_alone if p.startswith(judge.CORE)]


def test_the_workspace_links_the_repository_and_carries_its_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "pv").mkdir(parents=True)
    (repo / "pv" / "expr.py").write_text("")
    (repo / "pv" / "plugin.py").write_text("")
    (repo / "tests").mkdir()
    pyproject = '[project]\nname = "x"\n\n[tool.mutmut]\nsource_paths = ["engine/"]\n\n[tool.z]\na = 1\n'
    (repo / "pyproject.toml").write_text(pyproject)
    monkeypatch.setattr(judge, "ROOT", repo)
    monkeypatch.setattr(judge, "WORKSPACE", repo / "mutants-judge")
    judge.prepare()
    judge.prepare()  # a second chunk finds the workspace as the first left it
    space = repo / "mutants-judge"
    assert (space / "pv").resolve() == repo / "pv" and (space / "tests").is_symlink()
    assert not (space / "mutants-judge").exists()
    config = tomllib.loads((space / "pyproject.toml").read_text())
    assert config["project"]["name"] == "x" and config["tool"]["z"] == {"a": 1}
    assert config["tool"]["mutmut"]["source_paths"] == ["pv/"]
    assert config["tool"]["mutmut"]["do_not_mutate"] == ["pv/plugin.py"]


def _workspace(tmp_path: Path) -> Path:
    """A mutants folder as mutmut leaves it: one module's meta file, the stats, and the tests it ran."""
    mutants = tmp_path / "mutants"
    (mutants / "pv").mkdir(parents=True)
    (mutants / "tests" / "pv").mkdir(parents=True)
    (mutants / "tests" / "conftest.py").write_text("# shared\n")
    (mutants / "tests" / "pv" / "test_a.py").write_text("def test_one(): pass\n")
    (mutants / "tests" / "pv" / "test_b.py").write_text("def test_two(): pass\n")
    meta = {
        "exit_code_by_key": {f"pv.expr.x_f__mutmut_{i}": None for i in (1, 2, 3)} | {"pv.expr.x_g__mutmut_1": None},
        "hash_by_function_name": {"x_f": "f0", "x_g": "g0"},
    }
    (mutants / "pv" / "expr.py.meta").write_text(json.dumps(meta))
    stats = {
        "tests_by_mangled_function_name": {"pv.expr.x_f": ["tests/pv/test_a.py::test_one"], "pv.expr.x_g": []},
        "duration_by_test": {"tests/pv/test_a.py::test_one": 2.0},
    }
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    return mutants


def test_verdicts_are_kept_across_sessions_while_what_they_rest_on_holds(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    reach = {"pv.expr.x_f": {"tests/pv/test_a.py::test_one"}}
    judge.give_back(mutants, {"pv.expr.x_f__mutmut_1": 1, "pv.expr.x_f__mutmut_2": 0, "pv.expr.x_g__mutmut_1": 33})
    records: dict[str, object] = {}
    assert judge.harvest(mutants, records, reach) == 3
    path = tmp_path / "judge-results.jsonl"
    records_of.write_records(path, records)
    back = records_of.read_records(path)
    assert back == records and records_of.tests_path(path).is_file()
    killed, survived, untested = (back[f"pv.expr.{n}"] for n in ("x_f__mutmut_1", "x_f__mutmut_2", "x_g__mutmut_1"))
    assert killed.tests == survived.tests and set(killed.tests) == {"tests/pv/test_a.py", "tests/conftest.py"}
    assert (killed.status, survived.status, untested.status) == ("killed", "survived", "no tests")

    def holds(record: object, digest: str = "f0", now: dict[str, set[str]] | None = None) -> bool:
        return records_of.holds(record, digest, reach if now is None else now, records_of.FileDigests(mutants))

    assert all(holds(r, d) for r, d in ((killed, "f0"), (survived, "f0"), (untested, "g0")))
    assert not holds(killed, "f1") and not holds(survived, "f1")  # the function changed
    # a new test reaching the function: a kill stands, any other outcome is run again
    wider = {**reach, "pv.expr.x_f": {"tests/pv/test_a.py::test_one", "tests/pv/test_b.py::test_two"}}
    assert holds(killed, now=wider) and not holds(survived, now=wider)
    assert not holds(untested, "g0", {"pv.expr.x_g": {"tests/pv/test_b.py::test_two"}})
    # an edited test file (or a conftest above it) runs every verdict it supported again
    (mutants / "tests" / "conftest.py").write_text("# changed\n")
    assert not holds(killed) and not holds(survived) and holds(untested, "g0")


def test_give_back_writes_exactly_the_verdicts_kept(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    assert judge.give_back(mutants, {"pv.expr.x_f__mutmut_1": 1, "pv.expr.x_g__mutmut_9": 1}) == 1
    codes = {n: c for n, (_, _, c) in judge.generated(mutants).items()}
    assert codes == {
        "pv.expr.x_f__mutmut_1": 1,
        "pv.expr.x_f__mutmut_2": None,
        "pv.expr.x_f__mutmut_3": None,
        "pv.expr.x_g__mutmut_1": None,
    }
    assert judge.give_back(mutants, {}) == 0  # what is not given back is cleared
    assert judge.generated(mutants)["pv.expr.x_f__mutmut_1"] == ("pv/expr.py", "f0", None)


def test_a_chunk_takes_the_cheapest_undecided_mutants_that_fit(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    reach = {"pv.expr.x_f": {"tests/pv/test_a.py::test_one"}}
    judge.give_back(mutants, {"pv.expr.x_f__mutmut_3": 1})
    # x_g reaches no test (1 s of overhead), each x_f mutant 2 s of tests besides
    assert judge.todo(mutants, reach, 0, 1) == [
        "pv.expr.x_g__mutmut_1",
        "pv.expr.x_f__mutmut_1",
        "pv.expr.x_f__mutmut_2",
    ]
    assert judge.todo(mutants, reach, 4.1 / 60, 1) == ["pv.expr.x_g__mutmut_1", "pv.expr.x_f__mutmut_1"]
    assert judge.todo(mutants, reach, 0.1 / 60, 1) == ["pv.expr.x_g__mutmut_1"]  # at least one, always
    assert judge.todo(mutants, reach, 2.1 / 60, 2) == ["pv.expr.x_g__mutmut_1", "pv.expr.x_f__mutmut_1"]


def test_a_chunk_can_take_the_mutants_of_some_modules_only(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    meta = {"exit_code_by_key": {"pv.bundle.digest.x_h__mutmut_1": None}, "hash_by_function_name": {"x_h": "h0"}}
    (mutants / "pv" / "bundle").mkdir()
    (mutants / "pv" / "bundle" / "digest.py.meta").write_text(json.dumps(meta))
    assert judge.todo(mutants, {}, 0, 1, ("pv/bundle/",)) == ["pv.bundle.digest.x_h__mutmut_1"]
    assert judge.todo(mutants, {}, 0, 1, ("pv/bundle/digest.py", "pv/expr.py")) == [
        "pv.bundle.digest.x_h__mutmut_1",
        "pv.expr.x_f__mutmut_1",
        "pv.expr.x_f__mutmut_2",
        "pv.expr.x_f__mutmut_3",
        "pv.expr.x_g__mutmut_1",
    ]
    assert len(judge.todo(mutants, {}, 0, 1)) == 5


def test_stats_of_changed_tests_or_collected_another_way_are_collected_again(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    digests = records_of.FileDigests(mutants)
    files = {f: digests(f) for f in ("tests/pv/test_a.py", "tests/conftest.py")}
    functions = {"pv.expr.x_f": "f0", "pv.expr.x_g": "g0"}
    doc = {"version": judge.STATS_VERSION, "files": files, "functions": functions}
    (mutants / judge.STATS_FILES).write_text(json.dumps(doc))
    assert judge.stale_test_nodes(mutants, records_of.FileDigests(mutants)) == []
    (mutants / "tests" / "pv" / "test_a.py").write_text("def test_one(): assert 1\n")
    assert judge.stale_test_nodes(mutants, records_of.FileDigests(mutants)) == ["tests/pv/test_a.py::test_one"]
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    stats["duration_by_test"]["tests/pv/test_b.py::test_two"] = 0.1  # reached nothing in-process
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    (mutants / judge.STATS_FILES).write_text(json.dumps(files))  # an earlier way of collecting them: all again
    assert judge.stale_test_nodes(mutants, records_of.FileDigests(mutants)) == [
        "tests/pv/test_a.py::test_one",
        "tests/pv/test_b.py::test_two",
    ]


def test_the_stats_of_a_test_reaching_a_changed_function_are_collected_again(tmp_path: Path) -> None:
    """A function whose source changed may call others now (a helper split out of it): the tests
    that reached it, their files unchanged, are collected again, or the helper is reached by none."""
    mutants = _workspace(tmp_path)
    digests = records_of.FileDigests(mutants)
    files = {f: digests(f) for f in ("tests/pv/test_a.py", "tests/conftest.py")}
    doc = {"version": judge.STATS_VERSION, "files": files, "functions": {"pv.expr.x_f": "f0", "pv.expr.x_g": "g0"}}
    (mutants / judge.STATS_FILES).write_text(json.dumps(doc))
    meta = json.loads((mutants / "pv" / "expr.py.meta").read_text())
    meta["hash_by_function_name"]["x_g"] = "g1"  # reached by no test: nothing to collect
    (mutants / "pv" / "expr.py.meta").write_text(json.dumps(meta))
    assert judge.stale_test_nodes(mutants, records_of.FileDigests(mutants)) == []
    meta["hash_by_function_name"]["x_f"] = "f1"
    (mutants / "pv" / "expr.py.meta").write_text(json.dumps(meta))
    assert judge.stale_test_nodes(mutants, records_of.FileDigests(mutants)) == ["tests/pv/test_a.py::test_one"]


def test_a_chunk_killed_from_outside_is_recovered_from_mutmut_s_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mutants = _workspace(tmp_path)
    monkeypatch.setattr(judge, "WORKSPACE", tmp_path)
    monkeypatch.setattr(judge, "ROOT", mutants)  # a repository with every test file the workspace has
    monkeypatch.setattr(judge, "RECORDS", tmp_path / "judge-results.jsonl")
    # a record from before the chunk, of a function that has changed since: it no longer holds
    stale = records_of.Record("pv.expr.x_g__mutmut_1", "pv/expr.py", "g-old", 0, {})
    records_of.write_records(judge.RECORDS, {stale.mutant: stale})
    # what the killed chunk left in mutmut's meta file: two verdicts, the rest undecided
    judge.give_back(mutants, {"pv.expr.x_f__mutmut_1": 1, "pv.expr.x_f__mutmut_2": 0})
    judge.recover()
    recovered = records_of.read_records(judge.RECORDS)
    assert {n: r.status for n, r in recovered.items()} == {
        "pv.expr.x_f__mutmut_1": "killed",
        "pv.expr.x_f__mutmut_2": "survived",
    }
    assert all(r.function_digest == "f0" and set(r.tests) == {"tests/pv/test_a.py", "tests/conftest.py"}
               for r in recovered.values())  # fmt: skip


def test_a_test_file_deleted_from_the_repository_takes_its_verdicts_with_it(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    repo = tmp_path / "repo"
    (repo / "tests" / "pv").mkdir(parents=True)
    (repo / "tests" / "conftest.py").write_text("# shared\n")
    (repo / "tests" / "pv" / "test_b.py").write_text("def test_two(): pass\n")  # test_a.py was deleted
    (mutants / "tests" / "pv" / "__pycache__").mkdir()
    (mutants / "tests" / "pv" / "__pycache__" / "test_a.cpython-311.pyc").write_bytes(b"")
    digests = records_of.FileDigests(mutants)
    killed = records_of.Record(
        "pv.expr.x_f__mutmut_1", "pv/expr.py", "f0", 1, digests.of_tests(["tests/pv/test_a.py::t"])
    )
    reach = {"pv.expr.x_f": {"tests/pv/test_a.py::test_one"}}
    assert records_of.holds(killed, "f0", reach, digests)  # the copy is still there

    assert judge.drop_deleted_tests(mutants, repo) == ["tests/pv/test_a.py"]
    assert not records_of.holds(killed, "f0", reach, records_of.FileDigests(mutants))
    assert (mutants / "tests" / "pv" / "test_b.py").is_file() and (mutants / "tests" / "conftest.py").is_file()
    assert (mutants / "tests" / "pv" / "__pycache__").is_dir()
    assert judge.drop_deleted_tests(mutants, repo) == []
    assert judge.drop_deleted_tests(tmp_path / "nothing-yet", repo) == []


def test_a_verdict_rests_on_the_helper_modules_its_tests_import(tmp_path: Path) -> None:
    mutants = _workspace(tmp_path)
    (mutants / "tests" / "pv" / "toy.py").write_text("VALUE = 1\n")
    (mutants / "tests" / "pv" / "test_a.py").write_text("from tests.pv.toy import VALUE\n\ndef test_one(): pass\n")
    reach = {"pv.expr.x_f": {"tests/pv/test_a.py::test_one"}}
    digests = records_of.FileDigests(mutants)
    tests = digests.of_tests(reach["pv.expr.x_f"], helpers=True)
    assert sorted(tests) == ["tests/conftest.py", "tests/pv/test_a.py", "tests/pv/toy.py"]
    assert sorted(digests.of_tests(reach["pv.expr.x_f"])) == ["tests/conftest.py", "tests/pv/test_a.py"]
    killed = records_of.Record("pv.expr.x_f__mutmut_1", "pv/expr.py", "f0", 1, tests, helpers=True)
    survived = records_of.Record("pv.expr.x_f__mutmut_2", "pv/expr.py", "f0", 0, tests, helpers=True)
    older = records_of.Record(  # recorded before helpers were kept: it stands as it did
        "pv.expr.x_f__mutmut_3", "pv/expr.py", "f0", 0, digests.of_tests(reach["pv.expr.x_f"])
    )
    path = tmp_path / "judge-results.jsonl"
    records_of.write_records(path, {r.mutant: r for r in (killed, survived, older)})
    assert '"helpers"' not in path.read_text().splitlines()[2]  # an older record's line is written as it was
    read = records_of.read_records(path)
    assert [r.helpers for r in read.values()] == [True, True, False]
    assert all(records_of.holds(r, "f0", reach, digests) for r in read.values())

    (mutants / "tests" / "pv" / "toy.py").write_text("VALUE = 2\n")  # a helper edited: the tests may now say less
    after = records_of.FileDigests(mutants)
    assert [records_of.holds(r, "f0", reach, after) for r in read.values()] == [False, False, True]
