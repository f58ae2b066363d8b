"""The full mutation run's committed results: which verdicts outlive a change to the suite or the engine."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pv.mutation import append_run, read_results, summarize
from tests.scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


cache = load_script("scripts/mutation/cache.py")

CONTRACT = """\
metadata: {{id: {cid}, version: 1.0.0, kind: inference, status: DRAFT, description: d}}
falsification_tests:
  - {{id: {fid}, rule: r, prediction: p, check: "falsifiers.{module}:check", expect: "ok", ship_blocking: true}}
"""


@pytest.fixture
def mutants(tmp_path: Path) -> Path:
    """What mutmut leaves: the copied suite, a ``.meta`` per module, and pv's log."""
    root = tmp_path / "mutants"
    (root / "contracts").mkdir(parents=True)
    (root / "falsifiers").mkdir()
    (root / "contracts" / "a-v1.yaml").write_text(CONTRACT.format(cid="a-v1", fid="FALSIFY-A-001", module="a"))
    (root / "contracts" / "b-v1.yaml").write_text(CONTRACT.format(cid="b-v1", fid="FALSIFY-B-001", module="b"))
    (root / "contracts" / "real-model-x-v1.yaml").write_text(
        CONTRACT.format(cid="r-v1", fid="FALSIFY-R-001", module="r")
    )
    for name in ("a", "b", "r"):
        (root / "falsifiers" / f"{name}.py").write_text(f"def check(): return {{'ok': True}}  # {name}\n")
    meta = {
        "exit_code_by_key": {
            "sut.m.x_f__mutmut_1": 1,  # killed by A
            "sut.m.x_f__mutmut_2": 1,  # killed by B
            "sut.m.x_f__mutmut_3": 0,  # survived
            "sut.m.xǁCǁg__mutmut_1": -24,  # a hang, no falsifier named
            "sut.m.xǁCǁg__mutmut_2": None,  # not reached before the chunk stopped
        },
        "hash_by_function_name": {"x_f": "f1", "xǁCǁg": "g1"},
    }
    (root / "sut").mkdir()
    (root / "sut" / "m.py.meta").write_text(json.dumps(meta))
    a, b = "contracts/a-v1.yaml::FALSIFY-A-001", "contracts/b-v1.yaml::FALSIFY-B-001"
    stats = {
        "tests_by_mangled_function_name": {"sut.m.x_f": [a, b], "sut.m.xǁCǁg": [a]},
        "duration_by_test": {a: 1, b: 2},
    }
    (root / "mutmut-stats.json").write_text(json.dumps(stats))
    log = root / "pv-mutation-log.jsonl"
    append_run(log, "sut.m.x_f__mutmut_1", {"a-v1::FALSIFY-A-001": "falsified", "b-v1::FALSIFY-B-001": "survived"})
    append_run(log, "sut.m.x_f__mutmut_2", {"a-v1::FALSIFY-A-001": "survived", "b-v1::FALSIFY-B-001": "error"})
    append_run(log, "sut.m.x_f__mutmut_3", {"a-v1::FALSIFY-A-001": "survived", "b-v1::FALSIFY-B-001": "survived"})
    return root


def harvest(mutants: Path) -> dict[str, object]:
    names = sorted(cache.current_function_digests(mutants))
    chunk = cache.Chunk(names, cache.SuiteDigests.measure(mutants))
    chunk.save(mutants / "pv-chunk.json")
    loaded = cache.Chunk.load(mutants / "pv-chunk.json")
    assert loaded == chunk
    return {r.mutant: r for r in cache.harvest(mutants, loaded)}


def test_a_chunk_keeps_what_finished_with_what_each_verdict_rests_on(mutants: Path) -> None:
    records = harvest(mutants)
    assert set(records) == {
        "sut.m.x_f__mutmut_1",
        "sut.m.x_f__mutmut_2",
        "sut.m.x_f__mutmut_3",
        "sut.m.xǁCǁg__mutmut_1",
    }
    killed_by_a = records["sut.m.x_f__mutmut_1"]
    assert (killed_by_a.status, killed_by_a.killers, killed_by_a.suite_digest) == (
        "killed",
        ["a-v1::FALSIFY-A-001"],
        None,
    )
    assert killed_by_a.function_digest == "f1"
    assert records["sut.m.x_f__mutmut_2"].killers == ["b-v1::FALSIFY-B-001"]  # an error under a mutant kills
    survivor = records["sut.m.x_f__mutmut_3"]  # rests on the falsifiers that reach its function
    assert survivor.suite_digest is None and set(survivor.reached_by or {}) == {
        "a-v1::FALSIFY-A-001",
        "b-v1::FALSIFY-B-001",
    }
    hang = records["sut.m.xǁCǁg__mutmut_1"]
    assert (hang.status, hang.killers, hang.function_digest) == ("timeout", [], "g1")
    assert list(hang.reached_by or {}) == ["a-v1::FALSIFY-A-001"]


def reach(mutants: Path) -> dict[str, set[str]]:
    return cache.read_reach(mutants)


def test_editing_one_checker_reruns_its_kills_and_every_survivor_only(mutants: Path) -> None:
    records = harvest(mutants)
    before = cache.SuiteDigests.measure(mutants)
    assert all(before.current(r, reach(mutants)) for r in records.values())
    assert not before.current(records["sut.m.x_f__mutmut_3"])  # without current stats a survivor is undecided
    (mutants / "falsifiers" / "b.py").write_text("def check(): return {'ok': False}\n")
    after = cache.SuiteDigests.measure(mutants)
    still = sorted(n for n, r in records.items() if after.current(r, reach(mutants)))
    # A's kill and the hang only A reaches stand; B's kill and the survivor B reaches are re-run
    assert still == ["sut.m.x_f__mutmut_1", "sut.m.xǁCǁg__mutmut_1"]


def test_a_new_falsifier_reruns_only_the_survivors_of_functions_it_reaches(mutants: Path) -> None:
    records = harvest(mutants)
    (mutants / "contracts" / "c-v1.yaml").write_text(CONTRACT.format(cid="c-v1", fid="FALSIFY-C-001", module="c"))
    (mutants / "falsifiers" / "c.py").write_text("def check(): return {'ok': True}\n")
    suite = cache.SuiteDigests.measure(mutants)
    assert cache.stale_stats(mutants, suite)  # never recorded: every falsifier's stats are due
    cache.mark_stats_current(mutants, suite)
    assert cache.stale_stats(mutants, suite) == []
    stats_suite = mutants / cache.STATS_SUITE
    old_format = json.loads(stats_suite.read_text())["nodes"]  # stats collected before child processes counted
    stats_suite.write_text(json.dumps(old_format))
    assert len(cache.stale_stats(mutants, suite)) == len(suite.by_node)
    cache.mark_stats_current(mutants, suite)
    assert all(suite.current(r, reach(mutants)) for r in records.values())  # C reaches nothing here
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    stats["tests_by_mangled_function_name"]["sut.m.xǁCǁg"].append("contracts/c-v1.yaml::FALSIFY-C-001")
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    assert not suite.current(records["sut.m.xǁCǁg__mutmut_1"], reach(mutants))
    assert suite.current(records["sut.m.x_f__mutmut_3"], reach(mutants))


def test_a_changed_falsifier_loses_its_stats_so_that_mutmut_collects_them_again(mutants: Path) -> None:
    suite = cache.SuiteDigests.measure(mutants)
    cache.mark_stats_current(mutants, suite)
    (mutants / "falsifiers" / "b.py").write_text("def check(): return {'ok': False}\n")
    stale = cache.stale_stats(mutants, cache.SuiteDigests.measure(mutants))
    assert stale == ["contracts/b-v1.yaml::FALSIFY-B-001"]
    cache.drop_stats(mutants, stale)
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    assert stats["tests_by_mangled_function_name"]["sut.m.x_f"] == ["contracts/a-v1.yaml::FALSIFY-A-001"]
    assert list(stats["duration_by_test"]) == ["contracts/a-v1.yaml::FALSIFY-A-001"]


def test_a_promotion_or_a_real_model_contract_leaves_kills_standing(mutants: Path) -> None:
    records = harvest(mutants)
    (mutants / "falsifiers" / "r.py").write_text("changed = True\n")
    contract = mutants / "contracts" / "real-model-x-v1.yaml"
    contract.write_text(contract.read_text().replace("version: 1.0.0", "version: 2.0.0"))
    a = mutants / "contracts" / "a-v1.yaml"
    a.write_text(a.read_text().replace("status: DRAFT", "status: ACTIVE"))
    after = cache.SuiteDigests.measure(mutants)
    # Neither changes what FALSIFY-A-001 or FALSIFY-B-001 decides, so kills and survivors stand
    assert after.current(records["sut.m.x_f__mutmut_1"])
    assert after.current(records["sut.m.x_f__mutmut_3"], reach(mutants))


def test_a_stopped_chunk_forgets_what_it_did_not_reach(mutants: Path) -> None:
    cache.forget(mutants, ["sut.m.x_f__mutmut_3", "sut.m.xǁCǁg__mutmut_2"])
    codes = json.loads((mutants / "sut" / "m.py.meta").read_text())["exit_code_by_key"]
    assert codes["sut.m.x_f__mutmut_3"] is None and codes["sut.m.x_f__mutmut_1"] == 1
    assert "sut.m.x_f__mutmut_3" not in harvest(mutants)


def test_the_results_file_round_trips_and_pv_scores_it(mutants: Path, tmp_path: Path) -> None:
    records = harvest(mutants)
    path = tmp_path / "results.jsonl"
    records["sut.m.none__mutmut_1"] = cache.Record(
        "sut.m.none__mutmut_1", "sut/m.py", "x_none", "n1", "no tests", reached_by={}
    )
    cache.write(path, records)
    assert cache.read(path) == records  # "reached by none" stays a value, not a missing one
    del records["sut.m.none__mutmut_1"]
    cache.write(path, records)
    outcomes, log = read_results(path)
    summary = summarize(outcomes, log, {"sut.m.x_f__mutmut_3": "reviewed"})
    module = summary.modules["sut/m.py"]
    assert (module.killed, module.tested, module.equivalent) == (3, 3, 1)
    assert module.raw_ratio == pytest.approx(3 / 4) and module.ratio == pytest.approx(1.0)
    assert summary.killers["sut.m.x_f__mutmut_1"] == ["a-v1::FALSIFY-A-001"]
    path.write_text(path.read_text() + '{"mutant": 1}\n')
    with pytest.raises(ValueError, match=r"results\.jsonl:5"):
        cache.read(path)


def test_a_falsifier_added_to_a_contract_leaves_its_siblings_kills_standing(mutants: Path) -> None:
    records = harvest(mutants)
    a = mutants / "contracts" / "a-v1.yaml"
    sibling = (
        '{id: FALSIFY-A-002, rule: r, prediction: p, check: "falsifiers.a:check", expect: "ok", ship_blocking: true}'
    )
    a.write_text(a.read_text() + f"  - {sibling}\n")
    after = cache.SuiteDigests.measure(mutants)
    assert after.current(records["sut.m.x_f__mutmut_1"])  # A-001's own entry and checker are unchanged
    assert (
        after.legacy["a-v1::FALSIFY-A-001"] != cache.SuiteDigests.measure(mutants).by_falsifier["a-v1::FALSIFY-A-001"]
    )
    a.write_text(a.read_text().replace('expect: "ok"', 'expect: "not ok"', 1))  # A-001's own expect
    assert not cache.SuiteDigests.measure(mutants).current(records["sut.m.x_f__mutmut_1"])


def test_lines_of_the_whole_contract_scheme_are_restated_while_they_hold(mutants: Path) -> None:
    records = harvest(mutants)
    suite = cache.SuiteDigests.measure(mutants)
    kill = records["sut.m.x_f__mutmut_1"]
    old_style = replace(kill, killer_digests={k: suite.legacy[k] for k in kill.killers})
    assert not suite.current(old_style)
    assert cache.migrate(old_style, suite) == kill and suite.current(cache.migrate(old_style, suite))
    survivor = records["sut.m.x_f__mutmut_3"]
    old_survivor = replace(survivor, reached_by={k: suite.legacy[k] for k in survivor.reached_by or {}})
    assert cache.migrate(old_survivor, suite) == survivor
    a = mutants / "contracts" / "a-v1.yaml"
    a.write_text(a.read_text().replace("version: 1.0.0", "version: 1.1.0"))  # the old digest no longer holds
    changed = cache.SuiteDigests.measure(mutants)
    assert cache.migrate(old_style, changed) == old_style and not changed.current(old_style)


def test_function_hashes_are_keyed_as_mutmut_keys_its_stats(tmp_path: Path) -> None:
    # mutmut's stats step drops the test lists of modules whose hashes it has not seen; the stats
    # child gives it these, one key per generated function, module path dotted
    (tmp_path / "engine" / "train").mkdir(parents=True)
    (tmp_path / "engine" / "qa.py.meta").write_text(json.dumps({"hash_by_function_name": {"x_greedy": "aa"}}))
    (tmp_path / "engine" / "train" / "loop.py.meta").write_text(
        json.dumps({"hash_by_function_name": {"x_lr_factor": "bb", "xǁTrainConfigǁto_dict": "cc"}})
    )
    assert cache.function_hashes(tmp_path) == {
        "engine.qa.x_greedy": "aa",
        "engine.train.loop.x_lr_factor": "bb",
        "engine.train.loop.xǁTrainConfigǁto_dict": "cc",
    }


def test_a_reopened_kill_keeps_its_killer_as_the_first_to_run(mutants: Path, tmp_path: Path) -> None:
    records = harvest(mutants)
    store = tmp_path / "killers.json"
    cache.remember_killers(store, records.values())
    assert cache.read_killers(store) == {
        "sut.m.x_f__mutmut_1": ["a-v1::FALSIFY-A-001"],
        "sut.m.x_f__mutmut_2": ["b-v1::FALSIFY-B-001"],
    }  # the survivor and the hang named no killer
    later = replace(records["sut.m.x_f__mutmut_2"], killers=["a-v1::FALSIFY-A-001"])
    cache.remember_killers(store, [later])  # the latest kill replaces the earlier one, the rest stay
    assert cache.read_killers(store)["sut.m.x_f__mutmut_2"] == ["a-v1::FALSIFY-A-001"]
    assert len(cache.read_killers(store)) == 2
    # B's checker is edited: its kill no longer holds, but the hint for its rerun still names A
    (mutants / "falsifiers" / "b.py").write_text("def check(): return {'ok': False}\n")
    suite = cache.SuiteDigests.measure(mutants)
    hints = mutants / "pv-mutation-hints.json"
    names = ["sut.m.x_f__mutmut_2", "sut.m.x_f__mutmut_3"]
    assert cache.write_hints(hints, names, cache.read_killers(store), suite) == 1
    assert json.loads(hints.read_text()) == {"sut.m.x_f__mutmut_2": ["contracts/a-v1.yaml::FALSIFY-A-001"]}
    (mutants / "contracts" / "a-v1.yaml").unlink()  # a killer gone from the suite is no hint
    assert cache.write_hints(hints, names, cache.read_killers(store), cache.SuiteDigests.measure(mutants)) == 0


def test_a_reopened_survivor_runs_only_the_falsifiers_new_or_changed_since(mutants: Path, tmp_path: Path) -> None:
    records = harvest(mutants)
    store = tmp_path / "survivals.json"
    cache.remember_survivals(store, records.values())
    survivor = "sut.m.x_f__mutmut_3"
    assert set(cache.read_survivals(store)) == {survivor}  # kills and hangs are no survivals
    # a new falsifier C reaches f: the survivor is re-opened, and runs C alone
    (mutants / "contracts" / "c-v1.yaml").write_text(CONTRACT.format(cid="c-v1", fid="FALSIFY-C-001", module="c"))
    (mutants / "falsifiers" / "c.py").write_text("def check(): return {'ok': True}\n")
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    c = "contracts/c-v1.yaml::FALSIFY-C-001"
    stats["tests_by_mangled_function_name"]["sut.m.x_f"].append(c)
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    suite, generated, skips = (
        cache.SuiteDigests.measure(mutants),
        cache.current_function_digests(mutants),
        tmp_path / "s.json",
    )
    names = sorted(generated)
    assert cache.write_skips(skips, names, cache.read_survivals(store), generated, suite, reach(mutants)) == 1
    a, b = "contracts/a-v1.yaml::FALSIFY-A-001", "contracts/b-v1.yaml::FALSIFY-B-001"
    assert json.loads(skips.read_text()) == {survivor: [a, b]}
    # B changed since: it runs again beside C
    (mutants / "falsifiers" / "b.py").write_text("def check(): return {'ok': False}\n")
    suite = cache.SuiteDigests.measure(mutants)
    cache.write_skips(skips, names, cache.read_survivals(store), generated, suite, reach(mutants))
    assert json.loads(skips.read_text()) == {survivor: [a]}
    # the function changed since: every falsifier runs
    changed = {**generated, survivor: (generated[survivor][0], "f2")}
    assert cache.write_skips(skips, names, cache.read_survivals(store), changed, suite, reach(mutants)) == 0
    # nothing new reaches it (a falsifier was only dropped): no skip list that would leave nothing to run
    stats["tests_by_mangled_function_name"]["sut.m.x_f"] = [a]
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    assert cache.write_skips(skips, names, cache.read_survivals(store), generated, suite, reach(mutants)) == 0
    # killed since: forgotten
    cache.remember_survivals(store, [replace(records[survivor], status="killed", killers=["c-v1::FALSIFY-C-001"])])
    assert cache.read_survivals(store) == {}


TWO_CHECKERS = """\
from pv.checkers import checker

LIMIT = 3


def helper():
    return LIMIT


@checker(observes=["ok"])
def first():
    return {"ok": helper() == 3}


@checker(observes=["ok"])
def second():
    return {"ok": True}
"""


def test_widening_one_checker_leaves_its_neighbours_kills_standing(mutants: Path) -> None:
    module = mutants / "falsifiers" / "a.py"
    module.write_text(TWO_CHECKERS)
    a = mutants / "contracts" / "a-v1.yaml"
    a.write_text(a.read_text().replace("falsifiers.a:check", "falsifiers.a:first"))
    b = mutants / "contracts" / "b-v1.yaml"
    b.write_text(b.read_text().replace("falsifiers.b:check", "falsifiers.a:second"))
    records = harvest(mutants)
    a_kill, b_kill = records["sut.m.x_f__mutmut_1"], records["sut.m.x_f__mutmut_2"]
    module.write_text(TWO_CHECKERS.replace('return {"ok": True}', 'return {"ok": 1 + 1 == 2}'))
    after = cache.SuiteDigests.measure(mutants)
    assert after.current(a_kill) and not after.current(b_kill)  # only the edited checker's kill re-opens
    module.write_text(TWO_CHECKERS.replace("LIMIT = 3", "LIMIT = 4"))  # what the first reads, through helper
    after = cache.SuiteDigests.measure(mutants)
    assert not after.current(a_kill) and after.current(b_kill)
    calling = TWO_CHECKERS.replace('return {"ok": helper() == 3}', "return second()")
    module.write_text(calling)
    kept = cache.SuiteDigests.measure(mutants)
    module.write_text(calling.replace('return {"ok": True}', 'return {"ok": False}'))
    assert kept.of("a-v1::FALSIFY-A-001") != cache.SuiteDigests.measure(mutants).of("a-v1::FALSIFY-A-001")


def test_lines_of_the_whole_module_scheme_are_restated_while_they_hold(mutants: Path) -> None:
    (mutants / "falsifiers" / "a.py").write_text(TWO_CHECKERS)
    a = mutants / "contracts" / "a-v1.yaml"
    a.write_text(a.read_text().replace("falsifiers.a:check", "falsifiers.a:first"))
    records = harvest(mutants)
    suite = cache.SuiteDigests.measure(mutants)
    kill = records["sut.m.x_f__mutmut_1"]
    whole_module = replace(kill, killer_digests={k: suite.previous[k] for k in kill.killers})
    assert suite.previous["a-v1::FALSIFY-A-001"] != suite.of("a-v1::FALSIFY-A-001")
    assert not suite.current(whole_module) and cache.migrate(whole_module, suite) == kill
    # stats marked under the whole-module digests are not collected again while those hold
    cache.mark_stats_current(mutants, replace(suite, by_falsifier=suite.previous))
    assert cache.stale_stats(mutants, suite) == []
    (mutants / "falsifiers" / "a.py").write_text(TWO_CHECKERS.replace("LIMIT = 3", "LIMIT = 4"))
    changed = cache.SuiteDigests.measure(mutants)
    assert cache.migrate(whole_module, changed) == whole_module
    assert cache.stale_stats(mutants, changed) == ["contracts/a-v1.yaml::FALSIFY-A-001"]


def test_an_unchanged_falsifier_reaching_a_changed_function_is_collected_again(mutants: Path) -> None:
    suite = cache.SuiteDigests.measure(mutants)
    cache.mark_stats_current(mutants, suite)
    assert cache.stale_stats(mutants, suite) == []
    meta_path = mutants / "sut" / "m.py.meta"
    meta = json.loads(meta_path.read_text())
    meta["hash_by_function_name"]["xǁCǁg"] = "g2"  # C.g's source changed: it may call a new helper now
    meta_path.write_text(json.dumps(meta))
    assert cache.stale_stats(mutants, suite) == ["contracts/a-v1.yaml::FALSIFY-A-001"]  # the one reaching C.g
    meta["hash_by_function_name"]["x_f"] = "f2"
    meta_path.write_text(json.dumps(meta))
    assert len(cache.stale_stats(mutants, suite)) == 2
    cache.mark_stats_current(mutants, suite)
    assert cache.stale_stats(mutants, suite) == []
    suite_doc = json.loads((mutants / cache.STATS_SUITE).read_text())
    del suite_doc["functions"]  # marked before function digests were kept: every falsifier is due
    (mutants / cache.STATS_SUITE).write_text(json.dumps(suite_doc))
    assert len(cache.stale_stats(mutants, suite)) == len(suite.by_node)


def test_a_stray_none_file_becomes_a_folder_that_no_mutant_can_read_or_write(tmp_path: Path) -> None:
    (tmp_path / "None").write_bytes(b"a checkpoint a save mutant wrote to str(None)")
    cache.block_stray_none(tmp_path)
    cache.block_stray_none(tmp_path)  # again, over its own folder
    assert (tmp_path / "None").is_dir()
    with pytest.raises(IsADirectoryError):
        (tmp_path / "None").read_bytes()
    with pytest.raises(IsADirectoryError):
        (tmp_path / "None").write_bytes(b"another")


def test_equivalents_later_keeps_the_order_and_leaves_only_reviewed_ones() -> None:
    todo = ["engine.m.x_f__mutmut_3", "engine.m.x_f__mutmut_1", "engine.m.x_g__mutmut_2"]
    reviewed = ["engine.m.x_f__mutmut_1", "engine.other.x_h__mutmut_9"]  # one not in this chunk
    assert cache.equivalents_later(todo, reviewed) == (
        ["engine.m.x_f__mutmut_3", "engine.m.x_g__mutmut_2"],
        ["engine.m.x_f__mutmut_1"],
    )
    assert cache.equivalents_later(todo, []) == (todo, [])


def test_a_falsifiers_module_a_checker_imports_decides_its_kills(mutants: Path) -> None:
    folder = mutants / "falsifiers"
    (folder / "a.py").write_text("from falsifiers.helper import LIMIT\n\ndef check(): return {'ok': LIMIT == 3}\n")
    (folder / "helper.py").write_text("from falsifiers import deeper\n\nLIMIT = deeper.depth()\nOTHER = 1\n")
    (folder / "deeper.py").write_text("def depth():\n    from falsifiers.deepest import DEPTH\n    return DEPTH\n")
    (folder / "deepest.py").write_text("DEPTH = 3\n")
    records = harvest(mutants)
    a_kill, b_kill = records["sut.m.x_f__mutmut_1"], records["sut.m.x_f__mutmut_2"]
    edits = {  # what the checker reads: at the top, through a package module, inside a function
        "helper": ("LIMIT = deeper.depth()", "LIMIT = deeper.depth() + 0"),
        "deeper": ("return DEPTH", "return DEPTH * 1"),
        "deepest": ("DEPTH = 3", "DEPTH = 4"),
    }
    for module, (before, after_text) in edits.items():
        path = folder / f"{module}.py"
        path.write_text(path.read_text().replace(before, after_text))
        after = cache.SuiteDigests.measure(mutants)
        assert not after.current(a_kill) and after.current(b_kill), module
        path.write_text(path.read_text().replace(after_text, before))
    assert cache.SuiteDigests.measure(mutants).current(a_kill)
    # what it does not read, a comment, a hoisted import: the kill stands
    helper = folder / "helper.py"
    helper.write_text(helper.read_text().replace("OTHER = 1", "OTHER = 2  # a comment"))
    (folder / "deeper.py").write_text("from falsifiers.deepest import DEPTH\n\n\ndef depth():\n    return DEPTH\n")
    assert cache.SuiteDigests.measure(mutants).current(a_kill)


def test_a_kill_outlives_its_checker_moving_to_another_package(mutants: Path) -> None:
    """Checkers moved into family packages, a shared helper split out: the same definitions run."""
    folder = mutants / "falsifiers"
    (folder / "a.py").write_text(
        "from falsifiers.b import helper\n\n\ndef check():\n    import math\n    return {'ok': helper() == math.pi}\n"
    )
    (folder / "b.py").write_text(
        "import math\n\n\ndef helper():\n    return math.pi\n\n\ndef check(): return {'ok': True}\n"
    )
    records = harvest(mutants)
    a_kill = records["sut.m.x_f__mutmut_1"]
    (folder / "family").mkdir()
    (folder / "shared").mkdir()
    (folder / "family" / "__init__.py").write_text('"""A family."""\n')
    (folder / "shared" / "__init__.py").write_text("")
    (folder / "a.py").unlink()
    (folder / "family" / "a.py").write_text(
        "import math\n\nfrom falsifiers.shared.maths import helper  # moved\n\n\n"
        "def check():\n    return {'ok': helper() == math.pi}\n"
    )
    (folder / "shared" / "maths.py").write_text("import math\n\n\ndef helper():\n    return math.pi\n")
    contract = mutants / "contracts" / "a-v1.yaml"
    contract.write_text(contract.read_text().replace("falsifiers.a:check", "falsifiers.family.a:check"))
    moved = cache.SuiteDigests.measure(mutants)
    assert moved.current(a_kill)
    (folder / "shared" / "maths.py").write_text("import math\n\n\ndef helper():\n    return math.e\n")
    assert not cache.SuiteDigests.measure(mutants).current(a_kill)


def test_lines_written_before_imported_modules_counted_are_restated_while_they_hold(
    mutants: Path, tmp_path: Path
) -> None:
    folder = mutants / "falsifiers"
    (folder / "a.py").write_text("from falsifiers.helper import LIMIT\n\ndef check(): return {'ok': LIMIT == 3}\n")
    (folder / "helper.py").write_text("LIMIT = 3\n")
    records = harvest(mutants)
    suite = cache.SuiteDigests.measure(mutants)
    kill, survivor = records["sut.m.x_f__mutmut_1"], records["sut.m.x_f__mutmut_3"]
    assert suite.viewed["a-v1::FALSIFY-A-001"] != suite.located["a-v1::FALSIFY-A-001"]
    assert suite.viewed["b-v1::FALSIFY-B-001"] == suite.located["b-v1::FALSIFY-B-001"]  # imports nothing: unchanged
    viewed_kill = replace(kill, killer_digests={k: suite.viewed[k] for k in kill.killers})
    viewed_survivor = replace(survivor, reached_by={k: suite.viewed[k] for k in survivor.reached_by or {}})
    assert not suite.current(viewed_kill) and cache.migrate(viewed_kill, suite) == kill
    assert cache.migrate(viewed_survivor, suite) == survivor
    cache.mark_stats_current(mutants, replace(suite, by_falsifier=suite.viewed))
    assert cache.stale_stats(mutants, suite) == []
    (folder / "a.py").write_text((folder / "a.py").read_text().replace("LIMIT == 3", "LIMIT >= 3"))
    changed = cache.SuiteDigests.measure(mutants)
    assert cache.migrate(viewed_kill, changed) == viewed_kill
    assert cache.stale_stats(mutants, changed) == ["contracts/a-v1.yaml::FALSIFY-A-001"]
    # a survival kept under those digests runs only what is new (C), not A and B, unchanged since
    (folder / "a.py").write_text((folder / "a.py").read_text().replace("LIMIT >= 3", "LIMIT == 3"))
    store, skips = tmp_path / "survivals.json", tmp_path / "skips.json"
    cache.remember_survivals(store, [viewed_survivor])
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    stats["tests_by_mangled_function_name"]["sut.m.x_f"].append("contracts/c-v1.yaml::FALSIFY-C-001")
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    (mutants / "contracts" / "c-v1.yaml").write_text(CONTRACT.format(cid="c-v1", fid="FALSIFY-C-001", module="c"))
    (folder / "c.py").write_text("def check(): return {'ok': True}\n")
    with_c = cache.SuiteDigests.measure(mutants)
    generated = cache.current_function_digests(mutants)
    cache.write_skips(skips, sorted(generated), cache.read_survivals(store), generated, with_c, reach(mutants))
    assert json.loads(skips.read_text()) == {
        survivor.mutant: ["contracts/a-v1.yaml::FALSIFY-A-001", "contracts/b-v1.yaml::FALSIFY-B-001"]
    }


def test_a_doubted_verdict_is_dropped_and_a_name_without_one_refused(mutants: Path) -> None:
    records = harvest(mutants)
    kept = cache.without_verdicts(records, ["sut.m.x_f__mutmut_1"])
    assert sorted(kept) == sorted(set(records) - {"sut.m.x_f__mutmut_1"})
    with pytest.raises(KeyError, match=r"no verdict recorded for sut\.m\.x_f__mutmut_9"):
        cache.without_verdicts(records, ["sut.m.x_f__mutmut_1", "sut.m.x_f__mutmut_9"])


def test_a_fixture_counts_for_the_checkers_that_request_it_and_an_autouse_one_for_all(mutants: Path) -> None:
    conftest = mutants / "contracts" / "conftest.py"
    conftest.write_text(
        "import pytest\n\nSIZE = 3\n\n\n@pytest.fixture\ndef data():\n    return list(range(SIZE))\n\n\n"
        "@pytest.fixture\ndef unused():\n    return 1\n\n\n@pytest.fixture(autouse=True)\ndef _clean():\n    yield\n"
    )
    (mutants / "falsifiers" / "a.py").write_text("def check(data): return {'ok': len(data) == 3}\n")
    records = harvest(mutants)
    a_kill, b_kill = records["sut.m.x_f__mutmut_1"], records["sut.m.x_f__mutmut_2"]
    for before, after, a_stale, b_stale in (
        ("SIZE = 3", "SIZE = 4", True, False),  # what the requested fixture reads
        ("return 1", "return 2", False, False),  # a fixture nobody requests
        ("    yield\n", "    yield 0\n", True, True),  # an autouse fixture: every checker
    ):
        conftest.write_text(conftest.read_text().replace(before, after))
        suite = cache.SuiteDigests.measure(mutants)
        assert (not suite.current(a_kill), not suite.current(b_kill)) == (a_stale, b_stale), after
        conftest.write_text(conftest.read_text().replace(after, before))
