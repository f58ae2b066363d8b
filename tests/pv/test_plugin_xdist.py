"""Under pytest-xdist every worker's results reach the controller's end hook exactly once."""

from __future__ import annotations

import pytest

from tests.pv.toy import ToyProject, falsifier

CHECK = "toyfalsifiers.basic:"
# Subprocess runs pay for every installed plugin in every worker; these play no part here.
LEAN = ("-p", "no:benchmark", "-p", "no:anyio", "-p", "no:hypothesispytest")


def _contracts(toy: ToyProject) -> None:
    for n in range(3):
        cid = f"c{n}"
        prefix = f"C{n}"
        toy.contract(
            cid,
            [
                falsifier(
                    f"FALSIFY-{prefix}-001",
                    check=CHECK + "measure",
                    expect="value == 1.0",
                    mutant="toysystem:off_by_one",
                    ship_blocking=True,
                ),
                falsifier(
                    f"FALSIFY-{prefix}-002", check=CHECK + "measure", params={"offset": 1.0}, expect="value < 1.5"
                ),
                falsifier(f"FALSIFY-{prefix}-003", check=CHECK + "crash", expect="value < 1.5"),
                falsifier(
                    f"FALSIFY-{prefix}-004", check=CHECK + "blind", expect="value < 1.5", mutant="toysystem:off_by_one"
                ),
                falsifier(
                    f"FALSIFY-{prefix}-005",
                    check=CHECK + "measure",
                    expect="value == 1.0",
                    requires=["package:no_such_pkg"],
                ),
            ],
        )


def test_two_workers_give_the_same_verdicts_as_a_serial_run(toy: ToyProject) -> None:
    _contracts(toy)
    serial = toy.pytester.runpytest_subprocess(*LEAN, "--pv-mutants", "-m", "not slow")
    serial_record = toy.run_record()
    parallel = toy.pytester.runpytest_subprocess(*LEAN, "--pv-mutants", "-m", "not slow", "-p", "xdist", "-n", "2")
    parallel_record = toy.run_record()

    def summary(record: dict) -> dict:
        return {
            (r["contract_id"], r["falsify_id"]): (r["verdict"], (r["mutant"] or {}).get("verdict"), r["skip_reason"])
            for r in record["results"]
        }

    assert len(parallel_record["results"]) == 15  # each falsifier exactly once
    assert summary(parallel_record) == summary(serial_record)
    assert {r["worker"] for r in parallel_record["results"]} == {"gw0", "gw1"}
    assert parallel_record["contracts"] == serial_record["contracts"]
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    line = (
        "pv: 15 falsifiers, 12 evaluated (6 survived, 3 falsified, 3 error), "
        "3 skipped: missing package no_such_pkg; mutants: 3/6 killed (3 vacuous or broken)"
    )
    serial.stdout.fnmatch_lines([line])
    parallel.stdout.fnmatch_lines([line])


def test_zero_selection_fails_under_xdist_too(toy: ToyProject) -> None:
    toy.contract("c0", [falsifier("FALSIFY-C0-001", check=CHECK + "measure", expect="value == 1.0")])
    result = toy.pytester.runpytest_subprocess(*LEAN, "-m", "ship_blocking", "-p", "xdist", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*selected 0 falsifiers*"])
