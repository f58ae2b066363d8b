"""``pv mutation report``: scoring a mutmut run and naming the falsifiers that killed each mutant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pv.commands.mutation  # noqa: F401  (registers `pv mutation`)
from pv.app import app
from pv.mutation import (
    REASON_CHARS,
    MutationReportError,
    append_run,
    function_of,
    read_equivalent,
    read_log,
    read_mutmut,
    read_results,
    status_of,
    summarize,
)

runner = CliRunner()


def mutmut_results(root: Path, module: str, codes: dict[str, int | None]) -> None:
    """What mutmut leaves behind: ``mutants/<module>.meta`` with an exit code per mutant."""
    meta = root / "mutants" / f"{module}.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    mutmut_results(
        tmp_path,
        "sut/model.py",
        {
            "sut.model.x_f__mutmut_1": 1,  # killed
            "sut.model.x_f__mutmut_2": 1,  # killed
            "sut.model.x_f__mutmut_3": 0,  # survived
            "sut.model.x_f__mutmut_4": -24,  # CPU limit: a hang is detected
            "sut.model.x_g__mutmut_1": 33,  # no falsifier reaches it
            "sut.model.x_g__mutmut_2": None,  # not checked yet
            "sut.model.x_g__mutmut_3": 0,  # survived, reviewed as equivalent
        },
    )
    mutmut_results(tmp_path, "sut/io.py", {"sut.io.x_h__mutmut_1": 1, "sut.io.x_h__mutmut_2": 37})
    log = tmp_path / "mutants" / "pv-mutation-log.jsonl"
    append_run(log, "sut.model.x_f__mutmut_1", {"c::FALSIFY-A-001": "falsified", "c::FALSIFY-A-002": "survived"})
    append_run(log, "sut.model.x_f__mutmut_2", {"c::FALSIFY-A-001": "survived", "c::FALSIFY-A-002": "error"})
    append_run(log, "sut.model.x_f__mutmut_3", {"c::FALSIFY-A-001": "survived", "c::FALSIFY-B-001": "survived"})
    return tmp_path


def test_the_kill_ratio_counts_hangs_as_kills_and_unreached_code_as_survivors(run: Path) -> None:
    summary = summarize(read_mutmut(run / "mutants"), read_log(run / "mutants" / "pv-mutation-log.jsonl"))
    model = summary.modules["sut/model.py"]
    # tested: 2 killed + 1 timeout + 2 survived + 1 no tests; the unchecked one does not count
    assert (model.killed, model.tested) == (3, 6)
    assert model.ratio == pytest.approx(0.5)
    io = summary.modules["sut/io.py"]
    assert (io.killed, io.tested) == (1, 1)  # the type checker's catch never reached the suite
    assert [m.name for m in summary.survivors] == [
        "sut.model.x_f__mutmut_3",
        "sut.model.x_g__mutmut_1",
        "sut.model.x_g__mutmut_3",
    ]
    assert summary.killers["sut.model.x_f__mutmut_1"] == ["c::FALSIFY-A-001"]
    assert summary.killers["sut.model.x_f__mutmut_2"] == ["c::FALSIFY-A-002"]
    assert summary.kills_by_falsifier == {"c::FALSIFY-A-001": 1, "c::FALSIFY-A-002": 1, "c::FALSIFY-B-001": 0}
    assert summary.unexplained == ["sut.io.x_h__mutmut_1"]  # killed, yet no log line names a falsifier
    assert (summary.total.killed, summary.total.tested) == (4, 7)


def test_equivalent_mutants_leave_the_denominator_and_need_a_reason(run: Path, tmp_path: Path) -> None:
    equiv = tmp_path / "equivalent.txt"
    equiv.write_text("# reviewed\nsut.model.x_g__mutmut_3  # reorders two commutative adds\n")
    summary = summarize(read_mutmut(run / "mutants"), {}, read_equivalent(equiv))
    model = summary.modules["sut/model.py"]
    assert (model.killed, model.tested, model.equivalent) == (3, 5, 1)
    assert "sut.model.x_g__mutmut_3" not in [m.name for m in summary.survivors]
    equiv.write_text("sut.model.x_g__mutmut_3\n")
    with pytest.raises(MutationReportError, match="say why"):
        read_equivalent(equiv)


def test_an_equivalent_entry_for_a_killed_mutant_is_reported_and_the_kill_counts(run: Path, tmp_path: Path) -> None:
    equiv = tmp_path / "equivalent.txt"
    equiv.write_text("sut.model.x_g__mutmut_3  # reviewed\nsut.model.x_f__mutmut_1  # stale: renumbered since\n")
    summary = summarize(read_mutmut(run / "mutants"), {}, read_equivalent(equiv))
    model = summary.modules["sut/model.py"]
    assert (model.killed, model.tested, model.equivalent) == (3, 5, 1)  # the kill stands
    assert summary.contradicted == ["sut.model.x_f__mutmut_1"]
    assert summary.to_json()["contradicted"] == ["sut.model.x_f__mutmut_1"]


def test_a_sample_scores_only_the_mutants_it_names(run: Path) -> None:
    summary = summarize(read_mutmut(run / "mutants"), {}, only=["sut.model.x_f__mutmut_1", "sut.model.x_f__mutmut_3"])
    assert list(summary.modules) == ["sut/model.py"]
    assert (summary.total.killed, summary.total.tested) == (1, 2)


def test_the_newest_log_line_of_a_mutant_wins_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_run(log, "m1", {"f": "survived"})
    append_run(log, "m1", {"f": "falsified"})
    with log.open("a") as fh:
        fh.write('{"mutant": "m2", "verd')  # the run was killed mid-write
    assert read_log(log) == {"m1": {"f": "falsified"}}
    with log.open("a") as fh:
        fh.write('\n{"mutant": "m3", "verdicts": {}}\n')
    with pytest.raises(MutationReportError, match=r"log.jsonl:3"):
        read_log(log)


def test_a_kill_is_logged_with_its_reason_cut_and_a_survivor_without(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    report = "FALSIFIED c::f\n  prediction:   words\n  expect:       x\n  with values:  " + "x" * 2000
    append_run(log, "m1", {"f": "falsified", "g": "survived"}, {"f": report, "g": "not a kill"})
    append_run(log, "m2", {"f": "survived"}, {})
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["why"] == {"f": report.replace("\n  prediction:   words", "")[:REASON_CHARS]}
    assert "why" not in second
    assert read_log(log) == {"m1": {"f": "falsified", "g": "survived"}, "m2": {"f": "survived"}}


def test_unknown_exit_codes_are_suspicious_and_missing_results_are_errors(tmp_path: Path) -> None:
    assert status_of(77) == "suspicious"
    with pytest.raises(MutationReportError, match="run the mutation tool first"):
        read_mutmut(tmp_path / "mutants")
    (tmp_path / "mutants").mkdir()
    with pytest.raises(MutationReportError, match="no mutmut results"):
        read_mutmut(tmp_path / "mutants")
    (tmp_path / "mutants" / "x.py.meta").write_text("{not json")
    with pytest.raises(MutationReportError, match="not a mutmut results file"):
        read_mutmut(tmp_path / "mutants")


def test_the_command_prints_per_module_ratios_killers_and_survivors(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(run)
    result = runner.invoke(app, ["mutation", "report"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.split()[:4] == ["sut/model.py", "3", "6", "50.0%"] for line in lines), result.output
    assert any(line.split()[:4] == ["all", "4", "7", "57.1%"] for line in lines), result.output
    assert "0  c::FALSIFY-B-001   <- killed nothing" in result.output
    assert "no tests  sut.model.x_g__mutmut_1" in result.output
    as_json = json.loads(runner.invoke(app, ["mutation", "report", "--json"]).output)
    assert as_json["total"]["ratio"] == pytest.approx(4 / 7)
    failing = runner.invoke(app, ["mutation", "report", "--fail-under", "80"])
    assert failing.exit_code == 1 and "below 80%: sut/model.py" in failing.output


def test_the_command_says_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["mutation", "report"])
    assert result.exit_code == 2
    assert "run the mutation tool first" in result.output


def test_a_results_file_kept_across_runs_is_scored_raw_and_without_the_equivalent_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"mutant": "sut.m.x_f__mutmut_1", "module": "sut/m.py", "status": "killed", "killers": ["c::FALSIFY-A-001"]},
        {"mutant": "sut.m.x_f__mutmut_2", "module": "sut/m.py", "status": "survived"},
        {"mutant": "sut.m.xǁCǁg__mutmut_1", "module": "sut/m.py", "status": "survived"},
        {"mutant": "sut.m.xǁCǁg__mutmut_2", "module": "sut/m.py", "status": "no tests"},
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "equivalent.txt").write_text("sut.m.x_f__mutmut_2  # reviewed\n")
    monkeypatch.chdir(tmp_path)
    args = ["mutation", "report", "--results", "results.jsonl", "--equivalent", "equivalent.txt", "--by-function"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    # killed 1; counted 3 without the equivalent one (33.3 %), 4 with it (25.0 % raw)
    assert any(
        line.split()[:4] == ["sut/m.py", "1", "3", "25.0%"] and line.split()[-1] == "33.3%"
        for line in result.output.splitlines()
    ), result.output
    assert "2  sut/m.py  C.g" in result.output
    assert "listed as equivalent were killed" not in result.output
    (tmp_path / "equivalent.txt").write_text("sut.m.x_f__mutmut_2  # reviewed\nsut.m.x_f__mutmut_1  # stale\n")
    stale = runner.invoke(app, args)
    assert "1 mutants listed as equivalent were killed" in stale.output
    assert "  sut.m.x_f__mutmut_1" in stale.output.splitlines()
    outcomes, log = read_results(results)
    assert log["sut.m.x_f__mutmut_1"] == {"c::FALSIFY-A-001": "falsified"}
    assert [o.status for o in outcomes] == ["killed", "survived", "survived", "no tests"]
    results.write_text('{"mutant": "x"}\n')
    broken = runner.invoke(app, ["mutation", "report", "--results", "results.jsonl"])
    assert broken.exit_code == 2 and "results.jsonl:1" in broken.output


def test_function_names_read_as_written_in_the_source() -> None:
    assert function_of("engine.model.xǁAttentionǁforward__mutmut_3") == "Attention.forward"
    assert function_of("engine.model.x_rope__mutmut_12") == "rope"
    assert function_of("not-a-mutmut-name") == "not-a-mutmut-name"
