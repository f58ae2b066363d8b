"""The split's weights: what the newest bundles recorded, and how the greedy split spends them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pv.evidence.shards import key_of, parse_shard, recorded_durations, split


def _bundle(root: Path, contract: str, run_id: str, falsifiers: list[dict[str, Any]]) -> Path:
    bundle = root / contract / run_id
    bundle.mkdir(parents=True)
    doc = {"contract": {"id": contract}, "falsifiers": falsifiers}
    (bundle / "bundle.json").write_text(json.dumps(doc), encoding="utf-8")
    return bundle


def _f(fid: str, duration: object, selected: bool = True) -> dict[str, Any]:
    return {"id": fid, "selected": selected, "duration_s": duration}


OLD = "20261201T000000000000Z-aaaaaaaa"
NEW = "20261202T000000000000Z-bbbbbbbb"


def test_no_evidence_folder_weighs_nothing(tmp_path: Path) -> None:
    assert recorded_durations(tmp_path / "absent") == {}
    assert recorded_durations(tmp_path) == {}


def test_each_falsifier_weighs_what_its_contracts_newest_bundle_recorded(tmp_path: Path) -> None:
    _bundle(tmp_path, "alpha-v1", NEW, [_f("FALSIFY-A-001", 2.5), _f("FALSIFY-A-002", 4)])
    _bundle(tmp_path, "alpha-v1", OLD, [_f("FALSIFY-A-001", 9.0), _f("FALSIFY-A-003", 1.25)])
    _bundle(tmp_path, "beta-v1", OLD, [_f("FALSIFY-B-001", 0)])
    got = recorded_durations(tmp_path)
    assert got == {
        key_of("alpha-v1", "FALSIFY-A-001"): 2.5,  # the newer run's, though the older one is read after it on disk
        key_of("alpha-v1", "FALSIFY-A-002"): 4.0,
        key_of("alpha-v1", "FALSIFY-A-003"): 1.25,  # only the older run ran it
        key_of("beta-v1", "FALSIFY-B-001"): 0.0,
    }
    assert all(type(v) is float for v in got.values())


def test_what_a_run_did_not_select_or_cannot_be_a_duration_is_not_a_weight(tmp_path: Path) -> None:
    _bundle(tmp_path, "alpha-v1", OLD, [_f("FALSIFY-A-001", 3.0), _f("FALSIFY-A-002", 5.0)])
    _bundle(
        tmp_path,
        "alpha-v1",
        NEW,
        [
            _f("FALSIFY-A-001", 7.0, selected=False),  # not run by the newer run: the older weight stands
            _f("FALSIFY-A-002", -1.0),
            _f("FALSIFY-A-003", "3"),
            _f("FALSIFY-A-004", None),
            {"id": "FALSIFY-A-005", "selected": True},
        ],
    )
    assert recorded_durations(tmp_path) == {
        key_of("alpha-v1", "FALSIFY-A-001"): 3.0,
        key_of("alpha-v1", "FALSIFY-A-002"): 5.0,
    }


@pytest.mark.parametrize(
    "text",
    ["not json", json.dumps({"falsifiers": []}), json.dumps({"contract": {"id": "alpha-v1"}}), json.dumps([1])],
)
def test_a_bundle_that_cannot_be_read_is_passed_over(tmp_path: Path, text: str) -> None:
    _bundle(tmp_path, "alpha-v1", OLD, [_f("FALSIFY-A-001", 3.0)])
    spoiled = _bundle(tmp_path, "alpha-v1", NEW, [])
    (spoiled / "bundle.json").write_text(text, encoding="utf-8")
    _bundle(tmp_path, "beta-v1", OLD, [_f("FALSIFY-B-001", 1.0)])
    assert recorded_durations(tmp_path) == {
        key_of("alpha-v1", "FALSIFY-A-001"): 3.0,
        key_of("beta-v1", "FALSIFY-B-001"): 1.0,
    }


def test_a_bundle_folder_without_its_bundle_file_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "alpha-v1" / NEW).mkdir(parents=True)
    _bundle(tmp_path, "beta-v1", OLD, [_f("FALSIFY-B-001", 1.0)])
    assert recorded_durations(tmp_path) == {key_of("beta-v1", "FALSIFY-B-001"): 1.0}


def test_hidden_folders_and_stray_files_are_not_contracts(tmp_path: Path) -> None:
    _bundle(tmp_path / ".parts", "alpha-v1", OLD, [_f("FALSIFY-A-001", 3.0)])
    _bundle(tmp_path, ".cache", OLD, [_f("FALSIFY-A-001", 3.0)])
    (tmp_path / "README.md").write_text("not a contract")
    _bundle(tmp_path, "beta-v1", OLD, [_f("FALSIFY-B-001", 1.0)])
    assert recorded_durations(tmp_path) == {key_of("beta-v1", "FALSIFY-B-001"): 1.0}


def test_heaviest_first_onto_the_least_loaded_shard() -> None:
    durations = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 1.0}
    # a->1 (5), b->2 (4), c->2 (7), d->1 (8), e->2 (8)
    assert split(durations, durations, 2) == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 2}


def test_ties_go_to_the_lowest_shard_in_key_order() -> None:
    assert split(["c", "a", "b", "a"], {}, 3) == {"a": 1, "b": 2, "c": 3}
    assert split(["b", "a"], {"a": 2.0, "b": 2.0}, 1) == {"a": 1, "b": 1}


def test_an_unrecorded_falsifier_weighs_the_median_of_the_recorded() -> None:
    # recorded 1, 1, 2 and 5: x weighs their median, 1.5, so it goes after r (2) and before p and q (1)
    durations = {"p": 1.0, "q": 1.0, "r": 2.0, "s": 5.0}
    # s->1 (5), r->2 (2), x->3 (1.5), p->3 (2.5), q->2 (3)
    assert split(["p", "q", "r", "s", "x"], durations, 3) == {"s": 1, "r": 2, "x": 3, "p": 3, "q": 2}
    # weighing the mean (2.25), 1 or 0 instead would each give another split
    for weight, plan in (
        (2.25, {"s": 1, "x": 2, "r": 3, "p": 3, "q": 2}),
        (1.0, {"s": 1, "r": 2, "p": 3, "q": 3, "x": 2}),
        (0.0, {"s": 1, "r": 2, "p": 3, "q": 3, "x": 2}),
    ):
        assert split(["p", "q", "r", "s", "x"], {**durations, "x": weight}, 3) == plan


def test_shards_without_any_recorded_weight_are_balanced_by_count() -> None:
    plan = split([f"k{i}" for i in range(7)], {}, 3)
    counts = [list(plan.values()).count(s) for s in (1, 2, 3)]
    assert counts == [3, 2, 2]
    assert plan["k0"] == 1 and plan["k1"] == 2 and plan["k2"] == 3


def test_one_shard_of_one_is_a_shard() -> None:
    assert parse_shard("1/1") == (1, 1)
