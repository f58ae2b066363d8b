"""merge() over parts built in memory: the one run they make, field by field, and each refusal in
its own words."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pv.evidence.shards import Part, ShardError, merge, read_part, write_part
from pv.results import ContractRun, FalsifierResult, RunRecord, Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, record, result

A, B, C = (f"demo-v1::{fid}" for fid in IDS)
PLAN = {A: 1, B: 2, C: 3}
STARTS = {1: "2026-03-01T10:00:02+00:00", 2: "2026-03-01T10:00:01+00:00", 3: "2026-03-01T10:00:03+00:00"}
ENDS = {1: "2026-03-01T10:05:00+00:00", 2: "2026-03-01T10:09:00+00:00", 3: "2026-03-01T10:04:00+00:00"}


def _results(shard: int, plan: dict[str, int]) -> list[FalsifierResult]:
    out = []
    for fid in IDS:
        if plan[f"demo-v1::{fid}"] == shard:
            out.append(result(fid, Verdict.SURVIVED))
        else:
            out.append(result(fid, Verdict.NOT_RUN, mutant=None))
    return out


def _part(project: Project, shard: int, shards: int = 3, plan: dict[str, int] | None = None, **run: object) -> Part:
    plan = PLAN if plan is None else plan
    rec = record(project, _results(shard, plan), started=STARTS[shard])
    rec = dataclasses.replace(rec, run_id=f"run-{shard}", finished_at=ENDS[shard], settings={"shard": shard})
    rec = dataclasses.replace(rec, **run)  # type: ignore[arg-type]
    return Part(Path(f"part-{shard}"), shard, shards, dict(plan), "c" * 40, {}, rec)


def _refused(parts: list[Part]) -> str:
    with pytest.raises(ShardError) as refused:
        merge(parts)
    return str(refused.value)


def test_the_parts_make_one_run_whatever_order_they_come_in(project: Project) -> None:
    parts = [_part(project, 3), _part(project, 1), _part(project, 2)]
    merged = merge(parts)
    assert (merged.shards, merged.present, merged.missing_shards, merged.not_run) == (3, [1, 2, 3], [], [])
    run = merged.run
    # the earliest part's identity, the latest part's end
    assert (run.run_id, run.started_at, run.finished_at) == ("run-2", STARTS[2], ENDS[2])
    assert run.settings == {"shard": 2} and run.mutants_enabled is True and run.interrupted is False
    assert run.selection == "ship_blocking shards 1,2,3 of 3"
    assert [(r.falsify_id, r.verdict) for r in run.results] == [(fid, Verdict.SURVIVED) for fid in IDS]
    assert merge(list(reversed(parts))).run == run


def test_a_missing_shard_leaves_its_falsifiers_not_run_and_the_run_interrupted(project: Project) -> None:
    merged = merge([_part(project, 1), _part(project, 3)])
    assert (merged.present, merged.missing_shards, merged.not_run) == ([1, 3], [2], [B])
    assert merged.run.interrupted is True
    assert merged.run.selection == "ship_blocking shards 1,3 of 3"
    verdicts = {r.falsify_id: r.verdict for r in merged.run.results}
    assert verdicts == {IDS[0]: Verdict.SURVIVED, IDS[1]: Verdict.NOT_RUN, IDS[2]: Verdict.SURVIVED}
    # the first shard missing too
    only_last = merge([_part(project, 3)])
    assert (only_last.missing_shards, only_last.not_run) == ([1, 2], [A, B])


def test_a_part_that_was_itself_interrupted_interrupts_the_run(project: Project) -> None:
    parts = [_part(project, 1), _part(project, 2, interrupted=True), _part(project, 3)]
    assert merge(parts).run.interrupted is True


def test_a_parametrized_falsifier_keeps_its_cases(project: Project) -> None:
    cases = [dataclasses.replace(result(IDS[0], Verdict.SURVIVED), case=f"k={k}") for k in (1, 2)]
    parts = [_part(project, s) for s in (1, 2, 3)]
    one = parts[0].run.results
    one[0] = dataclasses.replace(one[0], cases=cases)
    contracts = {"demo-v1": dataclasses.replace(parts[0].run.contracts["demo-v1"], cases={IDS[0]: ["k=1", "k=2"]})}
    for p in parts:
        p.run.contracts = contracts
    [first, *_] = merge(parts).run.results
    assert first.falsify_id == IDS[0] and [c.case for c in first.cases] == ["k=1", "k=2"]


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"shards": 4}, "shard counts"),
        ({"commit": "d" * 40}, "commits"),
        ({"plan": {A: 1, B: 3, C: 2}}, "splits"),
        ({"mutants_enabled": False}, "mutant settings"),
    ],
)
def test_parts_of_other_runs_are_refused_saying_what_differs(
    project: Project, change: dict[str, object], what: str
) -> None:
    parts = [_part(project, 1), _part(project, 2), _part(project, 3)]
    if "mutants_enabled" in change:
        parts[1].run.mutants_enabled = False
    else:
        parts[1] = dataclasses.replace(parts[1], **change)  # type: ignore[arg-type]
    assert _refused(parts).startswith(f"the parts are not one run: their {what} differ (shards 1, 3: ")


def test_nothing_to_merge_is_refused() -> None:
    assert _refused([]) == "no parts to merge"


def test_a_shard_given_twice_is_refused(project: Project) -> None:
    message = _refused([_part(project, 1), _part(project, 2), dataclasses.replace(_part(project, 2), path=Path("x"))])
    assert message == "shard 2 of 3 is given twice: part-2 and x"


@pytest.mark.parametrize(("field", "what"), [("sha256", "bytes"), ("code", "measured code")])
def test_a_contract_measured_otherwise_in_one_part_is_refused(project: Project, field: str, what: str) -> None:
    parts = [_part(project, 1), _part(project, 2), _part(project, 3)]
    run: ContractRun = parts[2].run.contracts["demo-v1"]
    other = dataclasses.replace(run, sha256="0" * 64) if field == "sha256" else dataclasses.replace(run, code={})
    parts[2].run.contracts = {"demo-v1": other}
    assert _refused(parts) == f"contract demo-v1: the parts measured different {what} (shard 3 differs)"


def test_a_falsifier_run_where_the_split_did_not_put_it_is_refused(project: Project) -> None:
    parts = [_part(project, 1), _part(project, 2), _part(project, 3)]
    parts[0].run.results[1] = result(IDS[1], Verdict.SURVIVED)  # shard 2's falsifier, run by shard 1 too
    assert _refused(parts) == f"{B} ran in shard 1, which the split did not give it"
    parts = [_part(project, 1), _part(project, 2), _part(project, 3)]
    shared = {A: 1, B: 1, C: 3}  # a split that put B in shard 1, and a shard 2 that ran it anyway
    parts = [_part(project, 1, plan=shared), _part(project, 2, plan=shared), _part(project, 3, plan=shared)]
    parts[1].run.results[1] = result(IDS[1], Verdict.SURVIVED)
    assert _refused(parts) == f"{B} ran in shard 1 and in shard 2: a falsifier is in one part"


def test_a_part_that_lacks_what_the_split_gave_it_is_refused(project: Project) -> None:
    plan = {A: 1, B: 1, C: 1}
    lacking_one = _part(project, 1, shards=1, plan=plan)
    lacking_one.run.results[2] = result(IDS[2], Verdict.NOT_RUN, mutant=None)
    assert _refused([lacking_one]) == f"shard 1's part lacks {C}, which the split gave it: run the shard again"
    lacking_two = _part(project, 1, shards=1, plan=plan)
    for i in (1, 2):
        lacking_two.run.results[i] = result(IDS[i], Verdict.NOT_RUN, mutant=None)
    assert _refused([lacking_two]) == (
        f"shard 1's part lacks {B} (and 1 more), which the split gave it: run the shard again"
    )
    lacking_all = _part(project, 1, shards=1, plan=plan)
    lacking_all.run.results = [result(fid, Verdict.NOT_RUN, mutant=None) for fid in IDS]
    assert "(and 2 more)" in _refused([lacking_all])


def test_a_part_on_disk_carries_its_run_whole(project: Project, tmp_path: Path) -> None:
    rec: RunRecord = record(project, _results(1, PLAN), started=STARTS[1])
    rec = dataclasses.replace(
        rec, run_id="run-x", selection="all", interrupted=True, settings={"timeout_s": 60}, recovered=True
    )
    back = read_part(write_part(rec, project.evidence, 1, 3, PLAN, ENV), None).run
    assert back == rec


@pytest.mark.parametrize("field", ["selection", "interrupted", "settings", "recovered", "run_id"])
def test_a_part_whose_run_lacks_a_field_is_refused(project: Project, field: str) -> None:
    folder = write_part(record(project, _results(1, PLAN)), project.evidence, 1, 3, PLAN, ENV)
    part_file = folder / "part.json"
    data = json.loads(part_file.read_text())
    del data["run"][field]
    part_file.write_text(json.dumps(data))
    with pytest.raises(ShardError, match=f"part.json lacks or misstates '{field}'"):
        read_part(folder, None)
