"""A parametrized falsifier in the evidence: folded once, recovered from a journal, shown per case."""

from __future__ import annotations

from pathlib import Path

from pv.bundle.model import CaseEntry, FalsifierEntry, MutantEntry
from pv.cases import aggregate, verdicts
from pv.evidence.journal import Journal, record_from
from pv.results import ContractRun, FalsifierResult, MutantResult, RunRecord, Verdict
from pv.review.sections import _rows

CID, FID = "demo-v1", "FALSIFY-DEMO-001"


def _case(case: str, verdict: Verdict, loss: float | None = None, **kw: object) -> FalsifierResult:
    return FalsifierResult(
        CID,
        FID,
        verdict,
        ship_blocking=True,
        expect="loss < 3",
        aggregate="mean(loss) < 2.5",
        params={"vocab": 64, "seed": int(case)},
        observations={"loss": loss} if loss is not None else {},
        case=case,
        **kw,  # type: ignore[arg-type]
    )


def _run() -> ContractRun:
    return ContractRun(CID, "contracts/demo-v1.yaml", "0" * 64, "1.0.0", "DRAFT", [FID], [FID], {FID: ["0", "1"]})


def test_a_case_the_session_never_reported_leaves_the_falsifier_not_run() -> None:
    (row,) = verdicts([_case("1", Verdict.SURVIVED, 2.0)], {CID: _run()})
    assert row.verdict is Verdict.NOT_RUN
    assert [(c.case, c.verdict) for c in row.cases] == [("0", Verdict.NOT_RUN), ("1", Verdict.SURVIVED)]


def test_a_falsified_case_outweighs_one_in_error_and_one_not_run() -> None:
    rows = [_case("0", Verdict.ERROR, message="boom"), _case("1", Verdict.FALSIFIED, 9.0, message="too high")]
    result = aggregate(rows, ["0", "1", "2"])
    assert result.verdict is Verdict.FALSIFIED
    assert result.message.splitlines() == [f"FALSIFIED {CID}::{FID}: 1 of 3 cases falsified: [1]", "too high"]


def test_skipped_cases_skip_the_falsifier_with_their_reasons() -> None:
    rows = [_case("0", Verdict.SURVIVED, 1.0), _case("1", Verdict.SKIPPED, skip_reason="no CUDA")]
    result = aggregate(rows, ["0", "1"])
    assert (result.verdict, result.skip_reason) == (Verdict.SKIPPED, "1 of 2 cases skipped: no CUDA")


def test_the_aggregate_refuses_a_non_finite_case_value() -> None:
    result = aggregate([_case("0", Verdict.SURVIVED, float("nan")), _case("1", Verdict.SURVIVED, 1.0)], ["0", "1"])
    assert result.verdict is Verdict.ERROR
    assert "non-finite per-case values of loss" in result.message


def test_an_aggregate_over_a_name_a_case_lacks_is_an_error() -> None:
    rows = [_case("0", Verdict.SURVIVED, 1.0), _case("1", Verdict.SURVIVED)]
    result = aggregate(rows, ["0", "1"])
    assert result.verdict is Verdict.ERROR
    assert "aggregate reads loss, which not every case has" in result.message


def test_a_mutant_is_judged_only_when_every_case_ran_it() -> None:
    killed = MutantResult("m:f", Verdict.FALSIFIED, {"loss": 9.0}, "killed")
    rows = [_case("0", Verdict.SURVIVED, 1.0, mutant=killed), _case("1", Verdict.SURVIVED, 1.0)]
    assert aggregate(rows, ["0", "1"]).mutant is None


def test_a_journal_with_cases_recovers_into_one_aggregate(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "run-1")
    journal.session(RunRecord("run-1", "2026-11-23T10:00:00Z", ""))
    journal.contract(_run())
    for case in ("0", "1"):
        journal.start(f"contracts/demo-v1.yaml::{FID}[{case}]", CID, FID, True, case)
    journal.result(f"contracts/demo-v1.yaml::{FID}[0]", _case("0", Verdict.SURVIVED, 2.0))
    record = record_from(journal.path)
    assert record is not None
    (row,) = record.results
    assert row.verdict is Verdict.ERROR  # case [1] was running when the process died
    assert [(c.case, c.verdict) for c in row.cases] == [("0", Verdict.SURVIVED), ("1", Verdict.ERROR)]
    assert f"{CID}::{FID}[1]: the pytest process" in row.cases[1].message


def test_the_review_table_has_the_aggregate_row_then_one_row_per_case() -> None:
    entry = FalsifierEntry(
        id=FID,
        ship_blocking=True,
        selected=True,
        verdict="survived",
        expect="loss < 3",
        aggregate="mean(loss) < 2.5",
        params={"vocab": 64},
        observations={"loss": [2.0, 2.2]},
        mutant=MutantEntry(declared=None, verdict=None),
        cases=[
            CaseEntry(id="0", verdict="survived", params={"vocab": 64, "seed": 0}, observations={"loss": 2.0}),
            CaseEntry(id="1", verdict="survived", params={"vocab": 64, "seed": 1}, observations={"loss": 2.2}),
        ],
    )
    head, first, second = _rows(entry, "run-1")
    assert (head.id, head.observation, head.bound) == (FID, "2/2 cases survived", "mean(loss)(=2.1) < 2.5")
    assert (first.id, first.observation, first.bound) == (f"{FID}[0]", "loss = 2", "loss(=2) < 3")
    assert second.id == f"{FID}[1]" and second.verdict == "survived"


def test_a_skip_counts_as_hardware_only_when_every_skipped_case_was_for_hardware() -> None:
    gpu = _case("0", Verdict.SKIPPED, skip_reason="no CUDA", skip_kind="hardware")
    package = _case("1", Verdict.SKIPPED, skip_reason="missing package peft", skip_kind="other")
    assert aggregate([gpu, _case("1", Verdict.SURVIVED, 1.0)], ["0", "1"]).skip_kind == "hardware"
    assert aggregate([gpu, package], ["0", "1"]).skip_kind == "other"


def test_each_case_is_written_into_the_bundle_field_by_field() -> None:
    from pv.evidence.writer import _case_entry

    mutant = MutantResult("engine.faults:demo", Verdict.FALSIFIED, {"loss": 9.0}, "loss(=9.0) < 3")
    case = _case(
        "1",
        Verdict.SKIPPED,
        2.0,
        seed=7,
        duration_s=1.5,
        message="m",
        skip_reason="no CUDA",
        mutant=mutant,
        worker="gw1",
    )
    assert _case_entry(case) == CaseEntry(
        id="1",
        verdict="skipped",
        params={"vocab": 64, "seed": 1},
        observations={"loss": 2.0},
        seed=7,
        duration_s=1.5,
        message="m",
        skip_reason="no CUDA",
        mutant=MutantEntry(
            declared="engine.faults:demo",
            verdict="falsified",
            killed=True,
            observations={"loss": 9.0},
            message="loss(=9.0) < 3",
        ),
        worker="gw1",
    )
    plain = _case_entry(FalsifierResult(CID, FID, Verdict.NOT_RUN, ship_blocking=False))
    assert (plain.id, plain.mutant, plain.seed, plain.skip_reason, plain.message) == ("", None, None, None, "")
