"""Parametrized falsifiers: one item and one verdict per case, one aggregate verdict per falsifier."""

from __future__ import annotations

import json
import sys

import pytest

from pv.evidence.verify import verify_bundle
from tests.pv.toy import ToyProject, build_toy, falsifier

CHECK = "toyfalsifiers.basic:"
MUTANT = "toysystem:off_by_one"
LOOSE = """
from pv.checkers import checker
from toysystem import system_value


@checker(observes=["value"])
def shifted(offset, **ignored):
    return {"value": system_value() + offset}


@checker(observes=["value"])
def blind(**ignored):
    return {"value": 1.0}
"""


def _by_id(toy: ToyProject) -> dict[str, dict]:
    return {r["falsify_id"]: r for r in toy.run_record()["results"]}


def test_a_grid_is_one_item_per_case_and_one_aggregate_result(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5",
                parametrize={"offset": [0.0, 0.25]},
            )
        ],
    )
    result = toy.pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*alpha.yaml::FALSIFY-ALPHA-001[[]0.0[]] PASSED*",
            "*alpha.yaml::FALSIFY-ALPHA-001[[]0.25[]] PASSED*",
            "pv: 1 falsifier (2 cases), 1 evaluated (1 survived, 0 falsified, 0 error)*",
        ]
    )
    (entry,) = toy.run_record()["results"]
    assert entry["falsify_id"] == "FALSIFY-ALPHA-001"
    assert entry["verdict"] == "survived"
    assert entry["observations"] == {"value": [1.0, 1.25]}
    assert [(c["case"], c["verdict"], c["params"]) for c in entry["cases"]] == [
        ("0.0", "survived", {"offset": 0.0}),
        ("0.25", "survived", {"offset": 0.25}),
    ]


def test_explicit_cases_lay_their_values_over_params(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                params={"offset": 0.0},
                expect="value < 1.5",
                parametrize=[{"offset": 0.125}, {"offset": 0.5}],
            )
        ],
    )
    toy.pytester.runpytest().assert_outcomes(passed=1, failed=1)
    (entry,) = toy.run_record()["results"]
    assert [c["observations"]["value"] for c in entry["cases"]] == [1.125, 1.5]
    assert entry["verdict"] == "falsified"  # 1.5 < 1.5 is false: the second case refutes the claim


def test_one_falsified_case_falsifies_the_falsifier(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5",
                parametrize={"offset": [0.0, 1.0, 2.0]},
            )
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "falsified"
    assert entry["message"].startswith("FALSIFIED alpha::FALSIFY-ALPHA-001: 2 of 3 cases falsified: [1.0], [2.0]")
    assert entry["observations"] == {}  # no aggregate observations over a refuted claim


def test_an_aggregate_can_fail_where_every_case_passes(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.6",
                parametrize={"offset": [0.0, 0.5]},
                aggregate="mean(value) < 1.1 and n_cases == 2",
            )
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # like a coverage floor: the session fails, and says why
    result.stdout.fnmatch_lines(
        [
            "FALSIFIED alpha::FALSIFY-ALPHA-001: every case held, the aggregate did not",
            "  aggregate:    mean(value) < 1.1 and n_cases == 2",
            "  with values:  mean(value)(=1.25) < 1.1 and n_cases(=2) == 2",
            "  per case:",
            "    [[]0.0[]] {'value': 1.0}",
        ]
    )
    assert _by_id(toy)["FALSIFY-ALPHA-001"]["verdict"] == "falsified"


def test_the_aggregate_reads_shared_params_once_and_varying_ones_as_lists(pytester: pytest.Pytester) -> None:
    toy = build_toy(pytester, addopts="--pv-no-evidence", checkers={"loose": LOOSE})
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check="toyfalsifiers.loose:shifted",
                params={"scale": 3},
                expect="value < 10",
                parametrize={"offset": [1, 2, 3]},
                aggregate="offset == [1, 2, 3] and scale == 3 and sum(value) == 9 and median(value) == 3",
            )
        ],
    )
    toy.pytester.runpytest().assert_outcomes(passed=3)
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "survived"
    assert entry["params"] == {"scale": 3}  # what every case shares


def test_selecting_some_cases_leaves_the_falsifier_unjudged(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5",
                parametrize={"offset": [0.0, 0.25]},
                aggregate="mean(value) < 2",
            )
        ],
    )
    result = toy.pytester.runpytest("-k", "0.25")
    result.assert_outcomes(passed=1, deselected=1)
    assert result.ret == pytest.ExitCode.OK
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "not_run"
    assert entry["message"] == "1 of 2 cases ran; not run: [0.0]"
    assert [c["verdict"] for c in entry["cases"]] == ["not_run", "survived"]


def test_seeds_run_consecutive_seeds_from_params_seed(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "random_draw",
                params={"seed": 5},
                seeds=3,
                expect="0 <= draw < 1",
                aggregate="len(draw) == 3 and stdev(draw) > 0 and seed == [5, 6, 7]",
            )
        ],
    )
    result = toy.pytester.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*FALSIFY-ALPHA-001[[]5[]] PASSED*", "*FALSIFY-ALPHA-001[[]7[]] PASSED*"])
    (entry,) = toy.run_record()["results"]
    assert [c["seed"] for c in entry["cases"]] == [5, 6, 7]
    draws = entry["observations"]["draw"]
    assert len(set(draws)) == 3  # each case ran under its own seed
    toy.pytester.runpytest("-k", "FALSIFY-ALPHA-001 and 6")
    assert [c["observations"].get("draw") for c in toy.run_record()["results"][0]["cases"]] == [None, draws[1], None]


def test_a_mutant_is_killed_when_any_case_kills_it(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5",
                parametrize={"offset": [-1.0, 0.0]},
                mutant=MUTANT,
            )
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(passed=2)  # the [-1.0] case survives the mutant on its own: not a defect
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*mutants: 1/1 killed"])
    (entry,) = toy.run_record()["results"]
    assert entry["mutant"]["verdict"] == "falsified"
    assert entry["mutant"]["message"] == "killed by case [0.0]"
    assert [c["mutant"]["verdict"] for c in entry["cases"]] == ["survived", "falsified"]


def test_a_mutant_only_the_aggregate_sees_is_killed_by_the_aggregate(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 2.5",
                parametrize={"offset": [-0.875, 0.0]},
                aggregate="mean(value) < 1.0",
                mutant=MUTANT,
            )
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    (entry,) = toy.run_record()["results"]
    assert entry["mutant"]["message"] == "killed by the aggregate"
    assert entry["mutant"]["observations"] == {"value": [1.125, 2.0]}


def test_a_mutant_no_case_and_no_aggregate_kills_fails_the_session(pytester: pytest.Pytester) -> None:
    toy = build_toy(pytester, addopts="--pv-no-evidence", checkers={"loose": LOOSE})
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check="toyfalsifiers.loose:blind",
                expect="value < 1.5",
                parametrize={"offset": [1, 2]},
                aggregate="mean(value) < 1.5",
                mutant=MUTANT,
            )
        ],
    )
    result = toy.pytester.runpytest("--pv-mutants")
    result.assert_outcomes(passed=2)  # each case holds, and no case alone must kill the mutant
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*mutants: 0/1 killed (1 vacuous or broken)",
            "VACUOUS alpha::FALSIFY-ALPHA-001: VACUOUS: every case and the aggregate survived the mutant*",
        ]
    )
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "survived"
    assert entry["mutant"]["verdict"] == "survived"


def test_a_case_in_error_makes_the_falsifier_an_error(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "hang",
                expect="value < 1.5",
                parametrize={"seconds": [0, 5]},
                timeout_s=0.5,
                isolation="thread",
            )
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "error"
    assert entry["message"].startswith("ERROR alpha::FALSIFY-ALPHA-001: 1 of 2 cases error: [5]")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parametrize": {"offset": []}}, "parametrize: offset has no values; the falsifier would run zero times"),
        ({"parametrize": {"offset": [1, 1]}}, "cases 1 and 2 both have the id [1]; every case must differ"),
        ({"parametrize": {"not a name": [1]}}, "parametrize: 'not a name' is not a param name"),
        ({"parametrize": {"seed": [1, 2]}, "seeds": 2}, "`seeds:` and a `seed` in parametrize both set the seed"),
        ({"parametrize": {"a": list(range(20)), "b": list(range(20))}}, "the grid has more than 256 cases"),
        ({"aggregate": "mean(value) < 1"}, "aggregate needs cases to aggregate; declare parametrize: or seeds:"),
        ({"seeds": 2, "aggregate": "mean(value) <"}, "aggregate does not parse"),
    ],
)
def test_a_bad_parametrization_makes_the_contract_invalid(toy: ToyProject, fields: dict, message: str) -> None:
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value < 1.5", **fields)])
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert message in result.stdout.str()
    assert "invalid-contract" in result.stdout.str()


def test_cases_spread_over_xdist_workers_fold_into_one_aggregate(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 10",
                parametrize={"offset": [0.0, 1.0, 2.0, 3.0]},
                aggregate="mean(value) < 2",
            )
        ],
    )
    lean = ("-p", "no:benchmark", "-p", "no:anyio", "-p", "no:hypothesispytest")
    result = toy.pytester.runpytest_subprocess(*lean, "-p", "xdist", "-n", "2", "--dist", "load")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # mean 2.5
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "falsified"
    assert entry["observations"] == {"value": [1.0, 2.0, 3.0, 4.0]}  # declared order, whatever the worker order
    assert {c["worker"] for c in entry["cases"]} <= {"gw0", "gw1"}


def test_the_bundle_records_each_case_and_its_artifacts(pytester: pytest.Pytester) -> None:
    toy = build_toy(pytester, addopts="--pv-evidence")
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "writes_artifact",
                expect="n > 0",
                parametrize={"n": [1, 2]},
                aggregate="sum(n) == 3",
            )
        ],
    )
    toy.pytester.runpytest().assert_outcomes(passed=2)
    (bundle_dir,) = (p for p in (toy.root / "evidence" / "alpha").iterdir() if p.is_dir())
    bundle = json.loads((bundle_dir / "bundle.json").read_text())
    (entry,) = bundle["falsifiers"]
    assert entry["verdict"] == "survived"
    assert entry["aggregate"] == "sum(n) == 3"
    assert [(c["id"], c["verdict"], c["observations"]) for c in entry["cases"]] == [
        ("1", "survived", {"n": 1}),
        ("2", "survived", {"n": 2}),
    ]
    assert [c["artifacts"] for c in entry["cases"]] == [
        ["artifacts/logs/FALSIFY-ALPHA-001/1/table.csv"],
        ["artifacts/logs/FALSIFY-ALPHA-001/2/table.csv"],
    ]
    assert (bundle_dir / "artifacts/logs/FALSIFY-ALPHA-001/2/table.csv").read_text() == "n\n2\n"
    assert {a["case"] for a in bundle["artifacts"]} == {"1", "2"}
    report = verify_bundle(bundle_dir, toy.root)
    assert report.ok, report.problems


def test_lint_names_a_parametrized_param_the_checker_cannot_take(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5",
                parametrize={"ofset": [0.0, 0.25]},
            )
        ],
    )
    toy.write("pyproject.toml", '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["toyfalsifiers"]\n')
    result = toy.pytester.run(sys.executable, "-c", "from pv.cli import main; main()", "lint")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*param 'ofset' is not a parameter of toyfalsifiers.basic:measure; did you mean `offset`?*"]
    )


def test_lint_checks_the_names_an_aggregate_reads(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check=CHECK + "measure",
                expect="value < 1.5 + offset",
                parametrize={"offset": [0.0, 0.25]},
                aggregate="mean(valeu) < 1.5 and n_cases == 2 and max(offset) < 1",
            )
        ],
    )
    toy.write("pyproject.toml", '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["toyfalsifiers"]\n')
    result = toy.pytester.run(sys.executable, "-c", "from pv.cli import main; main()", "lint")
    assert result.ret == 1, result.stdout.str()
    out = result.stdout.str()
    assert "aggregate reads 'valeu', which is neither a param nor an observation" in out
    assert "'offset'" not in out and "'n_cases'" not in out  # a parametrized name and n_cases are known
