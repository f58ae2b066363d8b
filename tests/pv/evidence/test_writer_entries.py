"""What a run record becomes in a bundle, field by field: each falsifier's entry (selected or not,
its mutant, its skip), the summary's counts, run ids and where artifacts go."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pv.bundle.model import FalsifierEntry, MutantEntry
from pv.evidence.writer import _artifact_copies, _entry, _requires, _summary, artifact_kind, make_run_id, ran
from pv.results import FalsifierResult, MutantResult, Verdict


def _result(verdict: Verdict, **extra: object) -> FalsifierResult:
    return FalsifierResult("c-v1", "F1", verdict, True, **extra)  # type: ignore[arg-type]


def test_an_entry_not_selected() -> None:
    declared = {"expect": "x < 1", "params": {"n": 2}, "requires": "cuda", "mutant": "m:f", "ship_blocking": True}
    entry = _entry("F1", declared, None, True)
    assert (entry.id, entry.ship_blocking, entry.selected, entry.verdict) == ("F1", True, False, "not_run")
    assert (entry.expect, entry.params, entry.requires, entry.message) == (
        "x < 1",
        {"n": 2},
        ["cuda"],
        "not selected in this run",
    )
    assert entry.mutant == MutantEntry(declared="m:f", verdict=None)
    assert _entry("F1", {}, None, True).ship_blocking is False


def test_an_entry_that_ran() -> None:
    mutant = MutantResult("m:f", Verdict.FALSIFIED, {"x": 5.0}, "x(=5) < 1")
    result = _result(
        Verdict.SURVIVED, expect="x < 2", params={"n": 3}, observations={"x": float("nan")}, seed=4, duration_s=1,
        message="m", mutant=mutant, worker="gw0", device="cpu", timeout_s=9.0, isolation="process",
    )  # fmt: skip
    entry = _entry("F1", {"expect": "x < 1", "ship_blocking": False, "requires": ["a", 2]}, result, True)
    assert (entry.selected, entry.verdict, entry.expect, entry.params) == (True, "survived", "x < 2", {"n": 3})
    assert (entry.ship_blocking, entry.requires, entry.observations) == (False, ["a", "2"], {"x": "nan"})
    assert (entry.seed, entry.duration_s, entry.message, entry.skip_kind) == (4, 1.0, "m", None)
    assert (entry.worker, entry.device, entry.timeout_s, entry.isolation) == ("gw0", "cpu", 9.0, "process")
    assert entry.mutant == MutantEntry(
        declared="m:f", verdict="falsified", killed=True, observations={"x": 5.0}, message="x(=5) < 1"
    )
    bare = _entry("F1", {"expect": "x < 1", "params": {"n": 1}}, _result(Verdict.ERROR), True)
    assert (bare.expect, bare.params, bare.ship_blocking) == (
        "x < 1",
        {"n": 1},
        True,
    )  # the declared ones, the result's flag


def test_skips_and_mutants_not_run() -> None:
    hardware = _entry("F1", {}, _result(Verdict.SKIPPED, skip_reason="no CUDA", skip_kind="hardware"), True)
    other = _entry("F1", {}, _result(Verdict.SKIPPED, skip_reason="x"), True)
    assert (hardware.skip_kind, hardware.skip_reason, other.skip_kind) == ("hardware", "no CUDA", "other")
    unrun = _entry("F1", {"mutant": "m:f"}, _result(Verdict.SURVIVED), False)
    assert unrun.mutant == MutantEntry(declared="m:f", verdict=None, killed=None, message="mutants not run")
    assert _entry("F1", {"mutant": "m:f"}, _result(Verdict.SURVIVED), True).mutant.message == ""
    assert _entry("F1", {}, _result(Verdict.SURVIVED), False).mutant.message == ""  # none declared


def test_what_ran() -> None:
    assert ran(_result(Verdict.SKIPPED)) and not ran(_result(Verdict.NOT_RUN))
    assert ran(_result(Verdict.NOT_RUN, cases=[_result(Verdict.NOT_RUN), _result(Verdict.SURVIVED)]))
    assert not ran(_result(Verdict.NOT_RUN, cases=[_result(Verdict.NOT_RUN)]))


def _made(verdict: str, selected: bool = True, skip: str | None = None, killed: bool | None = None) -> FalsifierEntry:
    mutant = MutantEntry(
        declared="m:f", verdict=None if killed is None else ("falsified" if killed else "survived"), killed=killed
    )
    fields: dict[str, Any] = {"verdict": verdict, "skip_reason": skip, "mutant": mutant}
    return FalsifierEntry(id="F", ship_blocking=True, selected=selected, **fields)


def test_the_summary() -> None:
    entries = [
        _made("survived", killed=True),
        _made("survived", killed=False),
        _made("falsified"),
        _made("error"),
        _made("skipped", skip="no CUDA"),
        _made("skipped", skip="no CUDA"),
        _made("skipped"),
        _made("inconclusive"),
        _made("not_run", selected=False),
    ]
    s = _summary(entries)
    assert (s.declared, s.selected, s.survived, s.falsified, s.error) == (9, 8, 2, 1, 1)
    assert (s.skipped, s.inconclusive, s.not_run, s.mutants_killed, s.mutants_survived) == (3, 1, 1, 1, 1)
    assert s.skip_reasons == {"no CUDA": 2, "unspecified": 1}


def test_run_ids_and_artifacts(tmp_path: Path) -> None:
    run_id = make_run_id("2026-03-01T10:00:00.123456+00:00", "salt")
    assert re.fullmatch(r"20260301T100000123456Z-[0-9a-f]{8}", run_id)
    assert make_run_id("2026-03-01T10:00:00+00:00", "salt") != make_run_id("2026-03-01T10:00:00+00:00", "salt")
    assert re.fullmatch(r"\d{8}T\d{12}Z-[0-9a-f]{8}", make_run_id("not a time", "s"))  # now, then
    assert [artifact_kind(Path(p)) for p in ("a.PNG", "b.svg", "c.log", "d.txt", "e.bin")] == [
        "plot",
        "plot",
        "log",
        "log",
        "file",
    ]
    assert _requires(None) == [] and _requires("x") == ["x"] and _requires([1, "y"]) == ["1", "y"]
    (tmp_path / "run" / "plots").mkdir(parents=True)
    (tmp_path / "run" / "plots" / "loss.png").write_text("p")
    (tmp_path / "run" / "train.log").write_text("l")
    (tmp_path / "run" / "model.bin").write_text("b")
    copies, missing = _artifact_copies(
        "F1", [str(tmp_path / "run"), str(tmp_path / "gone.txt"), str(tmp_path / "run" / "train.log")]
    )
    assert missing == [str(tmp_path / "gone.txt")]
    assert [(rel, kind) for _, rel, kind in copies] == [
        ("artifacts/files/F1/model.bin", "file"),
        ("artifacts/plots/F1/plots/loss.png", "plot"),
        ("artifacts/logs/F1/train.log", "log"),
    ]
    assert _artifact_copies("F1", [str(tmp_path / "gone.txt")]) == ([], [str(tmp_path / "gone.txt")])


def test_a_case_entry_keeps_its_noise_and_every_field_the_case_measured() -> None:
    from pv.evidence.writer import _case_entry

    noise = {"rate": {"interval": [1.0, 2.0], "figures": {"runs": 5}}}
    case = FalsifierResult(
        "demo-v1", "FALSIFY-DEMO-001", Verdict.SURVIVED, True, params={"n": 2}, observations={"rate": 1.5},
        noise=noise, seed=3, duration_s=1, message="m", case="[n=2]", worker="gw1",
    )  # fmt: skip
    entry = _case_entry(case)
    assert (entry.id, entry.verdict, entry.params, entry.observations, entry.noise) == (
        "[n=2]", "survived", {"n": 2}, {"rate": 1.5}, noise,
    )  # fmt: skip
    assert (entry.seed, entry.duration_s, entry.message, entry.mutant, entry.worker) == (3, 1.0, "m", None, "gw1")
