"""Every verdict kind, its pytest outcome, its report, and the run record."""

from __future__ import annotations

import random
import time

import pytest

import pv.requirements
from tests.pv.toy import ToyProject, falsifier

CHECK = "toyfalsifiers.basic:"


def test_survived_passes_and_falsified_fails_with_the_full_story(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0"),
            falsifier(
                "FALSIFY-ALPHA-002",
                rule="offset applied twice",
                prediction="value stays under 1.5",
                check=CHECK + "measure",
                params={"offset": 1.25},
                expect="value <= 1.5 and offset > 0",
                if_fails="the offset path is broken",
            ),
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "FALSIFIED alpha::FALSIFY-ALPHA-002",
            "  rule:         offset applied twice",
            "  prediction:   value stays under 1.5",
            "  expect:       value <= 1.5 and offset > 0",
            "  with values:  value(=2.25) <= 1.5 and offset(=1.25) > 0",
            '  observations: {"value": 2.25}',
            "  if it fails:  the offset path is broken",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert toy.verdicts() == {"alpha::FALSIFY-ALPHA-001": "survived", "alpha::FALSIFY-ALPHA-002": "falsified"}
    record = toy.run_record()
    falsified = record["results"][1]
    assert falsified["observations"] == {"value": 2.25}
    assert falsified["params"] == {"offset": 1.25}
    assert falsified["expect"] == "value <= 1.5 and offset > 0"
    result.stdout.fnmatch_lines(["pv: 2 falsifiers, 2 evaluated (1 survived, 1 falsified, 0 error)*"])


@pytest.mark.parametrize(
    ("checker", "fragment"),
    [
        ("crash", "the checker raised (an error, not a falsification)"),
        ("half_observed", "malformed observations: missing declared observation(s): spread"),
        ("unserialisable", "malformed observations: observation 'value': a builtins.object is not a JSON"),
        ("not_a_dict", "malformed observations: the checker returned a list, not a dict of observations"),
        ("not_registered", "is not registered with @pv.checker"),
    ],
)
def test_harness_defects_are_errors_not_falsifications(toy: ToyProject, checker: str, fragment: str) -> None:
    toy.contract("err", [falsifier("FALSIFY-ERR-001", check=CHECK + checker, expect="value == 1.0")])
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ERROR err::FALSIFY-ERR-001" in out and fragment in out
    assert "FALSIFIED" not in out
    assert toy.verdicts() == {"err::FALSIFY-ERR-001": "error"}
    result.stdout.fnmatch_lines(["pv: 1 falsifier, 1 evaluated (0 survived, 0 falsified, 1 error)*"])


def test_the_crash_report_shows_the_checker_frame(toy: ToyProject) -> None:
    toy.contract("err", [falsifier("FALSIFY-ERR-001", check=CHECK + "crash", expect="value == 1.0")])
    result = toy.pytester.runpytest()
    result.stdout.fnmatch_lines(["*toyfalsifiers/basic.py*in crash", "*RuntimeError: checker blew up"])


def test_a_checker_outside_the_packages_is_never_imported_or_called(toy: ToyProject) -> None:
    toy.write("evil.py", "import pathlib\npathlib.Path('imported.txt').write_text('x')\ndef boom():\n    pass\n")
    toy.contract("evil", [falsifier("FALSIFY-EVIL-001", check="evil:boom", expect="x == 1")])
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*PV111 FALSIFY-EVIL-001: checker module `evil` is outside the checker packages*"])
    assert not (toy.root / "imported.txt").exists()


def test_a_hang_becomes_an_error_at_the_timeout(toy: ToyProject) -> None:
    toy.contract(
        "slowpoke",
        [
            falsifier(
                "FALSIFY-SLOW-001", check=CHECK + "hang", params={"seconds": 30}, timeout_s=0.3, expect="value == 1"
            )
        ],
    )
    start = time.monotonic()
    result = toy.pytester.runpytest()
    assert time.monotonic() - start < 20
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "ERROR slowpoke::FALSIFY-SLOW-001: checker timed out after 0.3 s*",
            "where it was at the deadline (innermost last):",
            "*toyfalsifiers*basic.py*, in hang",
            "*time.sleep(seconds)*",
        ]
    )
    assert "threading.py" not in result.stdout.str()
    assert toy.verdicts() == {"slowpoke::FALSIFY-SLOW-001": "error"}


def test_the_global_timeout_option_applies_without_a_per_falsifier_one(toy: ToyProject) -> None:
    toy.contract(
        "slowpoke", [falsifier("FALSIFY-SLOW-001", check=CHECK + "hang", params={"seconds": 30}, expect="value == 1")]
    )
    result = toy.pytester.runpytest("--pv-timeout", "0.2")
    result.stdout.fnmatch_lines(["*checker timed out after 0.2 s*"])


def test_unmet_requirements_skip_with_the_reason(toy: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pv.requirements, "current_machine", lambda: pv.requirements.Machine())
    toy.contract(
        "hw",
        [
            falsifier("FALSIFY-HW-001", check=CHECK + "measure", expect="value == 1.0", requires=["cuda"]),
            falsifier("FALSIFY-HW-002", check=CHECK + "measure", expect="value == 1.0", requires=["cuda_mem_gib>=40"]),
            falsifier(
                "FALSIFY-HW-003", check=CHECK + "measure", expect="value == 1.0", requires=["package:no_such_pkg"]
            ),
            falsifier("FALSIFY-HW-004", check=CHECK + "measure", expect="value == 1.0", requires=["cpu"]),
            falsifier("FALSIFY-HW-005", prediction="documentation only, as in the Rust dialect"),
            falsifier("FALSIFY-HW-006", check=CHECK + "skips_itself", expect="value == 1.0"),
        ],
    )
    result = toy.pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=5)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] contracts/hw.yaml:8: no CUDA",
            "SKIPPED [[]1[]] contracts/hw.yaml:*: no CUDA",
            "SKIPPED [[]1[]] contracts/hw.yaml:*: missing package no_such_pkg",
            "SKIPPED [[]1[]] contracts/hw.yaml:*: not bound*",
            "SKIPPED [[]1[]] contracts/hw.yaml:*: the toy backend is not available",
        ],
        consecutive=False,
    )
    record = toy.run_record()
    reasons = {r["falsify_id"]: r["skip_reason"] for r in record["results"] if r["verdict"] == "skipped"}
    assert reasons["FALSIFY-HW-001"] == "no CUDA"
    assert reasons["FALSIFY-HW-003"] == "missing package no_such_pkg"
    result.stdout.fnmatch_lines(
        ["pv: 6 falsifiers, 1 evaluated (1 survived, 0 falsified, 0 error), 5 skipped (2 no CUDA, *"]
    )


def test_gpu_requirements_are_met_on_a_big_enough_machine(toy: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    machine = pv.requirements.Machine(cuda=True, gpu_count=1, gpu_mem_gib=[24.0])
    monkeypatch.setattr(pv.requirements, "current_machine", lambda: machine)
    toy.contract(
        "hw",
        [
            falsifier("FALSIFY-HW-001", check=CHECK + "measure", expect="value == 1.0", requires=["cuda"]),
            falsifier("FALSIFY-HW-002", check=CHECK + "measure", expect="value == 1.0", requires=["cuda_mem_gib>=40"]),
            falsifier("FALSIFY-HW-003", check=CHECK + "measure", expect="value == 1.0", requires=["gpus>=2"]),
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=1, skipped=2)
    record = {r["falsify_id"]: r for r in toy.run_record()["results"]}
    assert record["FALSIFY-HW-001"]["device"] == "cuda"
    assert record["FALSIFY-HW-002"]["skip_reason"] == "needs 40 GiB of GPU memory, found 24.0 GiB"
    assert record["FALSIFY-HW-003"]["skip_reason"] == "needs 2 GPUs, found 1"


def test_params_seed_the_generators_before_the_call(toy: ToyProject) -> None:
    random.seed(1234)
    expected = random.random()
    toy.contract(
        "seeded",
        [
            falsifier(
                "FALSIFY-SEED-001", check=CHECK + "random_draw", params={"seed": 1234}, expect=f"draw == {expected!r}"
            ),
            falsifier("FALSIFY-SEED-002", check=CHECK + "random_draw", expect=f"draw != {expected!r}"),
        ],
    )
    toy.pytester.runpytest().assert_outcomes(passed=2)
    seeds = {r["falsify_id"]: r["seed"] for r in toy.run_record()["results"]}
    assert seeds == {"FALSIFY-SEED-001": 1234, "FALSIFY-SEED-002": 0}


def test_fixtures_and_artifacts_reach_the_checker(toy: ToyProject) -> None:
    toy.contract(
        "fx",
        [
            falsifier("FALSIFY-FX-001", check=CHECK + "uses_fixture", expect="value == 41"),
            falsifier("FALSIFY-FX-002", check=CHECK + "writes_artifact", params={"n": 3}, expect="n == 3"),
        ],
    )
    toy.pytester.runpytest().assert_outcomes(passed=2)
    record = {r["falsify_id"]: r for r in toy.run_record()["results"]}
    artifacts = record["FALSIFY-FX-002"]["artifacts"]
    assert len(artifacts) == 1 and artifacts[0].endswith("table.csv")
    with open(artifacts[0]) as fh:
        assert fh.read() == "n\n3\n"
    assert record["FALSIFY-FX-001"]["artifacts"] == []


def test_a_param_the_checker_cannot_take_is_an_error(toy: ToyProject) -> None:
    toy.contract(
        "bind", [falsifier("FALSIFY-BIND-001", check=CHECK + "measure", params={"ofset": 1}, expect="value == 1")]
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["ERROR bind::FALSIFY-BIND-001: cannot bind checker*param 'ofset' is not a parameter*did you mean `offset`?"]
    )


def test_an_expect_naming_no_observation_is_an_error(toy: ToyProject) -> None:
    toy.contract("expect", [falsifier("FALSIFY-EXP-001", check=CHECK + "measure", expect="valeu == 1")])
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["ERROR expect::FALSIFY-EXP-001: expect 'valeu == 1' could not be evaluated*"])
    assert toy.verdicts() == {"expect::FALSIFY-EXP-001": "error"}


def test_every_declared_falsifier_is_in_the_record_deselected_ones_as_not_run(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0", ship_blocking=True),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "measure", expect="value == 1.0"),
        ],
    )
    toy.contract("beta", [falsifier("FALSIFY-BETA-001", check=CHECK + "measure", expect="value == 1.0")])
    result = toy.pytester.runpytest("-m", "ship_blocking")
    result.assert_outcomes(passed=1, deselected=2)
    record = toy.run_record()
    # beta had nothing selected, so it is not part of this run at all
    assert set(record["contracts"]) == {"alpha"}
    assert record["contracts"]["alpha"]["declared"] == ["FALSIFY-ALPHA-001", "FALSIFY-ALPHA-002"]
    assert toy.verdicts() == {"alpha::FALSIFY-ALPHA-001": "survived", "alpha::FALSIFY-ALPHA-002": "not_run"}
    assert record["selection"] == "-m 'ship_blocking'"
    assert not record["interrupted"]
    result.stdout.fnmatch_lines(["pv: 1 falsifier, 1 evaluated (1 survived, 0 falsified, 0 error), 1 not run*"])


def test_an_interrupted_run_records_the_rest_as_not_run(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "crash", expect="value == 1.0"),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "measure", expect="value == 1.0"),
        ],
    )
    result = toy.pytester.runpytest("-x")
    result.assert_outcomes(failed=1)
    assert toy.verdicts() == {"alpha::FALSIFY-ALPHA-001": "error", "alpha::FALSIFY-ALPHA-002": "not_run"}
    assert toy.run_record()["interrupted"] is True


def test_the_contract_digest_is_of_the_exact_bytes(toy: ToyProject) -> None:
    import hashlib

    path = toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0")])
    toy.pytester.runpytest().assert_outcomes(passed=1)
    record = toy.run_record()["contracts"]["alpha"]
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["path"] == "contracts/alpha.yaml"


def test_verbose_output_names_the_kind_of_failure(toy: ToyProject) -> None:
    toy.contract(
        "kinds",
        [
            falsifier("FALSIFY-KINDS-001", check=CHECK + "measure", expect="value == 2.0"),
            falsifier("FALSIFY-KINDS-002", check=CHECK + "crash", expect="value == 1.0"),
            falsifier("FALSIFY-KINDS-003", check=CHECK + "measure", expect="value == 1.0"),
        ],
    )
    result = toy.pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "contracts/kinds.yaml::FALSIFY-KINDS-001 FALSIFIED*",
            "contracts/kinds.yaml::FALSIFY-KINDS-002 ERROR*",
            "contracts/kinds.yaml::FALSIFY-KINDS-003 PASSED*",
        ]
    )


def test_a_skip_kind_is_decided_by_the_harness_not_read_from_the_reason(toy: ToyProject) -> None:
    toy.write(
        "toyfalsifiers/saysgpu.py",
        """
        import pytest

        from pv.checkers import checker


        @checker(observes=["value"])
        def says_no_cuda():
            pytest.skip("no CUDA")  # a checker's own skip: its words do not make it a hardware skip
        """,
    )
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check="toyfalsifiers.basic:measure", expect="value == 1", requires=["cuda"]),
            falsifier("FALSIFY-ALPHA-002", check="toyfalsifiers.saysgpu:says_no_cuda", expect="value == 1"),
            falsifier(
                "FALSIFY-ALPHA-003",
                check="toyfalsifiers.basic:measure",
                expect="value == 1",
                requires=["cuda", "package:surely_not_installed_pkg"],
            ),
        ],
    )
    toy.pytester.runpytest().assert_outcomes(skipped=3)
    kinds = {r["falsify_id"]: (r["skip_reason"], r["skip_kind"]) for r in toy.run_record()["results"]}
    assert kinds["FALSIFY-ALPHA-001"] == ("no CUDA", "hardware")
    assert kinds["FALSIFY-ALPHA-002"] == ("no CUDA", "other")
    assert kinds["FALSIFY-ALPHA-003"][1] == "other"  # one unmet requirement is not hardware


def test_junit_xml_carries_each_falsifiers_verdict(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=CHECK + "measure", expect="value == 1.0"),
            falsifier("FALSIFY-ALPHA-002", check=CHECK + "measure", expect="value == 2.0"),
        ],
    )
    toy.pytester.runpytest("--junitxml=out.xml").assert_outcomes(passed=1, failed=1)
    import xml.etree.ElementTree as ET

    cases = ET.parse(toy.root / "out.xml").getroot().iter("testcase")
    found = {
        c.get("name"): [p.get("value") for p in c.iter("property") if p.get("name") == "pv_verdict"] for c in cases
    }
    assert found == {"FALSIFY-ALPHA-001": ["survived"], "FALSIFY-ALPHA-002": ["falsified"]}
