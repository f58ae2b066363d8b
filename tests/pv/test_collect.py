"""Collection: node ids, locations, markers, selection, malformed contracts."""

from __future__ import annotations

import pytest

from pv.collect import FalsifierItem, InvalidContractItem
from tests.pv.toy import ToyProject, falsifier

MEASURE = "toyfalsifiers.basic:measure"


def _tree(toy: ToyProject) -> None:
    toy.contract(
        "alpha",
        [
            falsifier("FALSIFY-ALPHA-001", check=MEASURE, expect="value == 1.0", ship_blocking=True),
            falsifier("FALSIFY-ALPHA-002", check=MEASURE, expect="value < 5", slow=True),
        ],
    )
    toy.contract(
        "beta",
        [
            falsifier("FALSIFY-BETA-001", check=MEASURE, expect="value == 1.0", requires=["cuda_mem_gib>=40"]),
            falsifier("FALSIFY-BETA-002", check=MEASURE, expect="value == 1.0", ship_blocking=True),
        ],
        folder="contracts/nested",
    )


def _ids(items: list[pytest.Item]) -> list[str]:
    return [i.nodeid for i in items]


def test_a_tree_of_contracts_collects_one_item_per_falsifier(toy: ToyProject) -> None:
    _tree(toy)
    toy.write("other/not-a-contract.yaml", "just: data\n")
    items, _ = toy.pytester.inline_genitems()
    assert _ids(items) == [
        "contracts/alpha.yaml::FALSIFY-ALPHA-001",
        "contracts/alpha.yaml::FALSIFY-ALPHA-002",
        "contracts/nested/beta.yaml::FALSIFY-BETA-001",
        "contracts/nested/beta.yaml::FALSIFY-BETA-002",
    ]
    assert all(isinstance(i, FalsifierItem) for i in items)


def test_location_points_at_the_falsifier_line_of_the_yaml(toy: ToyProject) -> None:
    _tree(toy)
    items, _ = toy.pytester.inline_genitems()
    lines = (toy.root / "contracts/alpha.yaml").read_text().splitlines()
    for item in items[:2]:
        path, lineno, domain = item.location
        assert path == "contracts/alpha.yaml"
        assert f"id: {item.name}" in lines[lineno]  # location lines are 0-based
        assert domain == f"alpha::{item.name}"


def test_markers_follow_the_contract(toy: ToyProject) -> None:
    _tree(toy)
    items, _ = toy.pytester.inline_genitems()
    marks = {i.name: {m.name for m in i.iter_markers()} for i in items}
    assert marks["FALSIFY-ALPHA-001"] == {"ship_blocking", "contract"}
    assert marks["FALSIFY-ALPHA-002"] == {"advisory", "slow", "contract"}
    assert marks["FALSIFY-BETA-001"] == {"advisory", "requires_gpu", "contract"}
    contract_mark = items[2].get_closest_marker("contract")
    assert contract_mark is not None and contract_mark.args == ("beta",) and contract_mark.kwargs == {"id": "beta"}


@pytest.mark.parametrize(
    ("markexpr", "expected"),
    [
        ("ship_blocking", ["FALSIFY-ALPHA-001", "FALSIFY-BETA-002"]),
        ("advisory", ["FALSIFY-ALPHA-002", "FALSIFY-BETA-001"]),
        ("requires_gpu", ["FALSIFY-BETA-001"]),
        ("not slow and not requires_gpu", ["FALSIFY-ALPHA-001", "FALSIFY-BETA-002"]),
        ("contract(id='beta')", ["FALSIFY-BETA-001", "FALSIFY-BETA-002"]),
    ],
)
def test_marker_selection_under_strict_markers(toy: ToyProject, markexpr: str, expected: list[str]) -> None:
    _tree(toy)
    result = toy.pytester.runpytest("--strict-markers", "--collect-only", "-q", "-m", markexpr)
    result.assert_outcomes()
    collected = [line.split("::")[-1] for line in result.outlines if "::FALSIFY-" in line]
    assert collected == expected


def test_k_and_node_id_selection(toy: ToyProject) -> None:
    _tree(toy)
    by_k = toy.pytester.runpytest("--collect-only", "-q", "-k", "FALSIFY-BETA-002")
    assert [line for line in by_k.outlines if "::" in line] == ["contracts/nested/beta.yaml::FALSIFY-BETA-002"]
    by_id = toy.pytester.runpytest("-q", "contracts/alpha.yaml::FALSIFY-ALPHA-001")
    by_id.assert_outcomes(passed=1)
    by_contract = toy.pytester.runpytest("--collect-only", "-q", "-k", "alpha")
    assert len([line for line in by_contract.outlines if "::FALSIFY-ALPHA" in line]) == 2


def test_zero_selection_under_ship_blocking_fails_the_run(toy: ToyProject) -> None:
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=MEASURE, expect="value == 1.0")])
    result = toy.pytester.runpytest("-m", "ship_blocking")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*pv: -m 'ship_blocking' selected 0 falsifiers*"])
    combined = toy.pytester.runpytest("-m", "ship_blocking and not slow")
    assert combined.ret == pytest.ExitCode.TESTS_FAILED
    # the same expression is fine when something is selected
    toy.contract("beta", [falsifier("FALSIFY-BETA-001", check=MEASURE, expect="value == 1.0", ship_blocking=True)])
    ok = toy.pytester.runpytest("-m", "ship_blocking")
    assert ok.ret == pytest.ExitCode.OK
    ok.assert_outcomes(passed=1, deselected=1)


def test_a_misspelled_marker_that_selects_nothing_gets_a_hint(toy: ToyProject) -> None:
    _tree(toy)
    result = toy.pytester.runpytest("-m", "ship_blockng and not slow")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "*pv: -m 'ship_blockng and not slow' selected 0 tests: "
            "marker 'ship_blockng' is not registered; did you mean 'ship_blocking'?"
        ]
    )
    # registered markers, marker arguments and grouping say nothing, even when nothing matches
    quiet = toy.pytester.runpytest("-m", 'advisory and not (contract(id="alpha") or contract(id="beta"))')
    assert quiet.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "is not registered" not in quiet.stdout.str()


def test_zero_selection_in_collect_only_fails_too(toy: ToyProject) -> None:
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=MEASURE, expect="value == 1.0")])
    result = toy.pytester.runpytest("--collect-only", "-m", "ship_blocking")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_malformed_contract_is_one_failing_item_and_hides_nothing(toy: ToyProject) -> None:
    toy.contract("good", [falsifier("FALSIFY-GOOD-001", check=MEASURE, expect="value == 1.0", ship_blocking=True)])
    toy.write(
        "contracts/bad.yaml",
        """\
        metadata:
          id: bad
          version: 1.0.0
          description: a contract with a typo
        falsification_tests:
          - id: FALSIFY-BAD-001
            prediction: p
            check: toyfalsifiers.basic:measure
            expect: "value ==== 1"
            shipblocking: true
        """,
    )
    toy.write("contracts/garbage.yml", "metadata: [unclosed\n")
    result = toy.pytester.runpytest("-m", "ship_blocking")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*INVALID contract bad: 2 errors; none of its falsifiers ran",
            "contracts/bad.yaml:9:*: PV109 FALSIFY-BAD-001: expect does not parse*",
            "contracts/bad.yaml:10:5: PV102 unknown key `shipblocking`*",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["contracts/garbage.yml:*:*: PV004 *"])
    assert toy.verdicts() == {"good::FALSIFY-GOOD-001": "survived"}
    result.stdout.fnmatch_lines(["pv: 1 falsifier, 1 evaluated (1 survived, 0 falsified, 0 error)*2 invalid contracts"])


def test_invalid_item_location_points_at_the_first_error(toy: ToyProject) -> None:
    toy.write("contracts/bad.yaml", "metadata:\n  id: bad\n  version: one\n  description: d\n")
    items, _ = toy.pytester.inline_genitems()
    assert len(items) == 1 and isinstance(items[0], InvalidContractItem)
    assert items[0].nodeid == "contracts/bad.yaml::invalid-contract"
    assert items[0].location[1] == 2  # line 3, 0-based


def test_duplicate_falsifier_ids_make_the_contract_invalid(toy: ToyProject) -> None:
    toy.contract(
        "dup",
        [
            falsifier("FALSIFY-DUP-001", check=MEASURE, expect="value == 1.0"),
            falsifier("FALSIFY-DUP-001", check=MEASURE, expect="value == 2.0"),
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["contracts/dup.yaml:*: PV121 FALSIFY-DUP-001 is declared twice*"])


def test_unknown_requirement_makes_the_contract_invalid(toy: ToyProject) -> None:
    toy.contract("req", [falsifier("FALSIFY-REQ-001", check=MEASURE, expect="value == 1.0", requires=["tpu"])])
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["contracts/req.yaml:*: PV100 FALSIFY-REQ-001: requires: unknown requirement 'tpu'*"])


def test_contracts_are_added_when_selecting_falsifiers_and_testpaths_names_only_tests(toy: ToyProject) -> None:
    toy.pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        pv_contracts = "contracts"
        pv_checker_packages = "toyfalsifiers"
        pv_fault_packages = "toysystem"
        pythonpath = "."
        addopts = "--pv-no-evidence"
        """
    )
    toy.write("tests/test_unit.py", "def test_unit():\n    pass\n")
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=MEASURE, expect="value == 1.0", ship_blocking=True)])
    # plain pytest keeps to testpaths: falsifiers run only when asked for
    toy.pytester.runpytest().assert_outcomes(passed=1)
    toy.pytester.runpytest("-m", "ship_blocking").assert_outcomes(passed=1)
    assert set(toy.verdicts()) == {"alpha::FALSIFY-ALPHA-001"}
    toy.pytester.runpytest("-k", "FALSIFY-ALPHA-001").assert_outcomes(passed=1)
    # explicit paths are respected: only what was named runs
    toy.pytester.runpytest("tests").assert_outcomes(passed=1)


def test_yaml_outside_the_contracts_dir_is_collected_only_when_named(toy: ToyProject) -> None:
    toy.contract("extra", [falsifier("FALSIFY-EXTRA-001", check=MEASURE, expect="value == 1.0")], folder="elsewhere")
    toy.pytester.runpytest("elsewhere").assert_outcomes()
    toy.pytester.runpytest("elsewhere/extra.yaml").assert_outcomes(passed=1)


def test_pv_contracts_option_overrides_the_ini(toy: ToyProject) -> None:
    toy.contract("extra", [falsifier("FALSIFY-EXTRA-001", check=MEASURE, expect="value == 1.0")], folder="specs")
    toy.contract("alpha", [falsifier("FALSIFY-ALPHA-001", check=MEASURE, expect="value == 1.0")])
    result = toy.pytester.runpytest("--pv-contracts", "specs", "specs")
    result.assert_outcomes(passed=1)
    assert set(toy.verdicts()) == {"extra::FALSIFY-EXTRA-001"}
