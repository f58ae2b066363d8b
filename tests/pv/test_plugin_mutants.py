"""Mutants: a falsifier must falsify its own planted fault, and faults never leak."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from pv.faults import ENV_VAR, FaultRegistry
from pv.results import Verdict
from pv.run_checker import Evaluation, FalsifierText, evaluate_call, run_mutant
from tests.pv.toy import ToyProject, falsifier

CHECK = "toyfalsifiers.basic:"
MUTANT = "toysystem:off_by_one"


def test_a_mutant_that_is_falsified_is_killed(toy: ToyProject) -> None:
    toy.contract(
        "alpha", [falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0", mutant=MUTANT)]
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pv: 1 falsifier, *; mutants: 1/1 killed"])
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "survived"
    assert entry["mutant"] == {
        "mutant": MUTANT,
        "verdict": "falsified",
        "observations": {"value": 2.0},
        "message": "killed",
    }
    assert toy.run_record()["mutants_enabled"] is True


def test_a_falsifier_that_survives_its_mutant_is_vacuous_and_fails(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "blind", expect="value < 1.5", mutant=MUTANT),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "measure", expect="value < 1.5", mutant=MUTANT),
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"VACUOUS alpha::FALSIFY-ALPHA-001: not killed by its mutant {MUTANT} (mutant run: survived)",
            "  the prediction held with the fault switched on, so this falsifier cannot detect it",
            "  expect:       value < 1.5",
            "  with values:  value(=1.0) < 1.5",
        ]
    )
    result.stdout.fnmatch_lines(["*mutants: 1/2 killed (1 vacuous or broken)"])
    by_id = {r["falsify_id"]: r for r in toy.run_record()["results"]}
    # the claim's own verdict is still what was measured; the vacuity is the mutant's
    assert by_id["FALSIFY-ALPHA-001"]["verdict"] == "survived"
    assert by_id["FALSIFY-ALPHA-001"]["mutant"]["verdict"] == "survived"


def test_mutants_do_not_run_without_the_option_and_do_with_the_ini(toy: ToyProject) -> None:
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=CHECK + "blind", expect="value < 1.5", mutant=MUTANT)])
    off = toy.pytester.runpytest()
    off.assert_outcomes(passed=1)
    off.stdout.fnmatch_lines(["*mutants: not run (--pv-mutants)"])
    assert toy.run_record()["results"][0]["mutant"] is None
    on = toy.pytester.runpytest("-o", "pv_mutants=true")
    on.assert_outcomes(failed=1)


def test_an_unresolvable_mutant_is_not_a_kill(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0", mutant="toysystem:no_such_fault"
            )
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*mutant 'toysystem:no_such_fault' cannot be resolved*"])
    assert "VACUOUS" not in result.stdout.str()  # a broken reference, not a check without teeth


def test_a_misspelled_mutant_is_a_broken_reference_with_a_suggestion(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0", mutant="toysystem:of_by_one")],
    )
    result = toy.pytester.runpytest("--pv-mutants", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*BROKEN*", "*BROKEN alpha::FALSIFY-ALPHA-001: broken reference: *did you mean `toysystem:off_by_one`?*"]
    )


def test_the_fault_is_off_for_the_next_falsifier_and_after_the_run(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0", mutant=MUTANT),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "fault_probe", expect="not seen and env == ''"),
            # a vacuous falsifier fails; its fault must be off afterwards all the same
            falsifier("FALSIFY-ALPHA-003", check=CHECK + "blind", expect="value == 1.0", mutant="toysystem:unused"),
            falsifier("FALSIFY-ALPHA-004", check=CHECK + "fault_probe", expect="not seen and env == ''"),
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    verdicts = toy.verdicts()
    assert verdicts["alpha::FALSIFY-ALPHA-002"] == "survived"
    assert verdicts["alpha::FALSIFY-ALPHA-004"] == "survived"
    result.assert_outcomes(passed=3, failed=1)
    toysystem = sys.modules.get("toysystem")
    assert toysystem is None or toysystem.FAULTS.active_names() == []


@pytest.fixture
def registry() -> FaultRegistry:
    reg = FaultRegistry("unit")
    reg.register("broken", "a planted defect")
    return reg


@pytest.fixture
def as_module(registry: FaultRegistry, monkeypatch: pytest.MonkeyPatch) -> str:
    module = type(sys)("pv_unit_faults")
    module.FAULTS = registry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pv_unit_faults", module)
    monkeypatch.delenv(ENV_VAR, raising=False)
    return "pv_unit_faults:broken"


def test_fault_is_on_inside_and_off_after_even_when_the_run_raises(registry: FaultRegistry, as_module: str) -> None:
    seen: list[tuple[bool, str | None]] = []

    def run() -> Evaluation:
        seen.append((registry.active("broken"), os.environ.get(ENV_VAR)))
        raise RuntimeError("the harness itself failed")

    with pytest.raises(RuntimeError):
        run_mutant(as_module, run)
    assert seen == [(True, "broken")]
    assert not registry.active("broken")
    assert ENV_VAR not in os.environ


def test_fault_is_off_after_a_mutant_run_that_times_out(registry: FaultRegistry, as_module: str) -> None:
    release = threading.Event()
    observed: list[bool] = []

    def hang() -> dict[str, float]:
        release.wait(10)
        observed.append(registry.active("broken"))
        return {"value": 1.0}

    text = FalsifierText("unit::FALSIFY-UNIT-001")
    result = run_mutant(
        as_module,
        lambda: evaluate_call(
            hang, {}, observes=["value"], expect="value == 1", params={}, text=text, timeout_s=0.1, seed=0
        ),
    )
    assert result.verdict is Verdict.ERROR and not result.killed
    assert "timed out" in result.message
    assert not registry.active("broken")
    release.set()
    deadline = time.monotonic() + 5
    while not observed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert observed == [False]  # the abandoned checker, when it resumes, sees the fault off


def test_an_existing_pv_faults_value_is_restored(
    registry: FaultRegistry, as_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "other")
    env_inside: list[str | None] = []

    def run() -> Evaluation:
        env_inside.append(os.environ.get(ENV_VAR))
        return Evaluation(Verdict.FALSIFIED)

    assert run_mutant(as_module, run).killed
    assert env_inside == ["other,broken"]
    assert os.environ[ENV_VAR] == "other"


def test_the_mutant_run_gets_its_own_tmp_path(toy: ToyProject) -> None:
    # The checker leaves a file in tmp_path; if the mutant run reused the first run's folder it
    # would find it (leftovers = 1), the prediction would hold and the falsifier would be vacuous.
    toy.write(
        "toyfalsifiers/leftovers.py",
        """
        from pv.checkers import checker
        from toysystem import system_value


        @checker(observes=["value", "leftovers"])
        def writes_tmp(tmp_path):
            leftovers = len(list(tmp_path.iterdir()))
            (tmp_path / "made-by-a-run").write_text("x")
            return {"value": system_value(), "leftovers": leftovers}
        """,
    )
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check="toyfalsifiers.leftovers:writes_tmp",
                expect="leftovers == 0 and value == 1.0",
                mutant=MUTANT,
            )
        ],
    )
    toy.pytester.runpytest("--pv-mutants").assert_outcomes(passed=1)
    (entry,) = toy.run_record()["results"]
    assert entry["mutant"]["verdict"] == "falsified"
    assert entry["mutant"]["observations"] == {"value": 2.0, "leftovers": 0}


UNDECIDED = "mutant pv_unit_faults:broken run inconclusive: the noise left the bound undecided"
VACUOUS = "VACUOUS: the prediction survived the mutant pv_unit_faults:broken; this falsifier cannot detect that fault"


@pytest.mark.parametrize(
    ("verdict", "message", "said"),
    [
        (Verdict.FALSIFIED, "ignored", "killed"),
        (Verdict.INCONCLUSIVE, "", UNDECIDED),
        (Verdict.INCONCLUSIVE, "x = 1", UNDECIDED + "\nx = 1"),
        (Verdict.SURVIVED, "held", VACUOUS),
        (Verdict.ERROR, "", "mutant pv_unit_faults:broken was not killed: its run ended in error"),
        (Verdict.SKIPPED, "why", "mutant pv_unit_faults:broken was not killed: its run ended in skipped\nwhy"),
    ],
)
def test_each_verdict_of_a_mutant_run_is_said_in_its_own_words(
    as_module: str, verdict: Verdict, message: str, said: str
) -> None:
    result = run_mutant(as_module, lambda: Evaluation(verdict, {"x": 1}, message))
    assert (result.mutant, result.verdict, result.observations, result.message) == (as_module, verdict, {"x": 1}, said)


def test_a_mutant_outside_the_allowed_packages_is_a_broken_reference_and_never_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "pv_never_imported", raising=False)
    result = run_mutant("pv_never_imported:broken", lambda: Evaluation(Verdict.FALSIFIED), allowed=["toyfalsifiers"])
    assert (result.mutant, result.verdict) == ("pv_never_imported:broken", Verdict.ERROR)
    assert result.message == (
        "broken reference: mutant 'pv_never_imported:broken' cannot be resolved: module 'pv_never_imported' is "
        "outside the checker and fault packages (toyfalsifiers); it was not imported"
    )
    assert "pv_never_imported" not in sys.modules
