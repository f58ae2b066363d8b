"""``pv validate`` rules: each one tripped (code, line, column) and not tripped by the clean tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.config import load_config
from pv.diagnostics import Diagnostic, Severity
from pv.loader import load_contract_file
from pv.validate import ValidationReport, validate_contracts, validate_paths

TEMPLATE = """\
metadata:
  id: {cid}
  version: 1.0.0
  description: {prefix} claims.
  references: ["a paper"]
  depends_on: []
  changelog:
    - {{version: 1.0.0, date: "2026-01-01", change: initial}}
proof_obligations:
  - id: {prefix}-INV-001
    type: bound
    property: stays small
falsification_tests:
  - id: FALSIFY-{prefix}-001
    obligation: {prefix}-INV-001
    prediction: x stays below 1
    check: falsifiers.alpha:measure
    expect: "0 < x <= 1"
    mutant: engine.faults:some_fault
    requires: [cpu]
kani_harnesses:
  - id: KANI-{prefix}-001
    obligation: {prefix}-INV-001
"""


def make(cid: str = "alpha-v1", prefix: str = "ALPHA") -> str:
    return TEMPLATE.format(cid=cid, prefix=prefix)


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def run(tmp_path: Path, files: dict[str, str], *, strict: bool = False) -> ValidationReport:
    root = tmp_path / "contracts"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return validate_paths([root], strict=strict, checker_packages=["falsifiers"], fault_packages=["engine"])


def found(report: ValidationReport, code: str) -> list[Diagnostic]:
    return [d for d in report.diagnostics if d.code == code]


def one(report: ValidationReport, code: str) -> Diagnostic:
    hits = found(report, code)
    assert len(hits) == 1, [d.format() for d in report.diagnostics]
    others = [d.format() for d in report.diagnostics if d.code != code]
    assert others == [], others
    return hits[0]


def at(d: Diagnostic) -> tuple[str, int, int]:
    return Path(d.path).name, d.line, d.col


def test_clean_tree_has_no_diagnostics(tmp_path: Path) -> None:
    report = run(
        tmp_path,
        {
            "alpha-v1.yaml": make(),
            "beta-v1.yaml": sub(make("beta-v1", "BETA"), "depends_on: []", "depends_on: [alpha-v1]"),
        },
    )
    assert report.diagnostics == []
    assert report.exit_code == 0
    assert report.summary() == "2 contracts, 2 falsifiers, 2 obligations: 0 errors, 0 warnings"
    assert report.counts == {"contracts": 2, "falsifiers": 2, "obligations": 2, "errors": 0, "warnings": 0}


def test_zero_contracts_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "README.md").write_text("no contracts here")
    report = run(tmp_path, {})
    d = one(report, "PV011")
    assert (d.line, d.col) == (0, 0)
    assert report.exit_code == 1
    assert report.summary().startswith("0 contracts")


# (file text edit, code, line, col, message fragment)
PER_FILE_CASES = [
    (("version: 1.0.0\n  desc", 'version: "1.0"\n  desc'), "PV104", 3, 12, "`1.0` is not semver"),
    (("{version: 1.0.0, date", "{version: v1, date"), "PV104", 8, 17, "changelog version `v1`"),
    (("ALPHA-INV-001", "inv1", "all"), "PV105", 10, 9, "obligation id `inv1`"),
    (("  - id: FALSIFY-ALPHA-001", "  - id: FALSIFY-alpha-1"), "PV105", 14, 9, "FALSIFY-<PREFIX>-NNN"),
    (("  - id: KANI-ALPHA-001", "  - id: KANI-1"), "PV105", 22, 9, "KANI-<PREFIX>-NNN"),
    (("prediction: x stays below 1", 'prediction: "   "'), "PV107", 16, 17, "prediction is empty"),
    (("prediction: x stays below 1", "prediction:"), "PV100", 16, 16, "valid string (got None)"),
    (('expect: "0 < x <= 1"', 'expect: "0 < x.real <= 1"'), "PV109", 18, 18, "attribute access"),
    (('expect: "0 < x <= 1"', "expect: 0 < x <=="), "PV109", 18, 21, "invalid syntax"),
    (('expect: "0 < x <= 1"', "expect: '0 < x <= 1 and'"), "PV109", 18, 28, "ends early"),
    (('expect: "0 < x <= 1"', 'expect: "open(x) > 0"'), "PV109", 18, 14, "call to 'open'"),
    (("check: falsifiers.alpha:measure", "check: falsifiers.alpha.measure"), "PV110", 17, 12, "module:function"),
    (("mutant: engine.faults:some_fault", "mutant: some fault"), "PV110", 19, 13, "mutant `some fault`"),
    (("check: falsifiers.alpha:measure", "check: os:system"), "PV111", 17, 12, "outside the checker packages"),
    (("check: falsifiers.alpha:measure", "check: falsifiersx:f"), "PV111", 17, 12, "`falsifiersx`"),
    (('    expect: "0 < x <= 1"\n', ""), "PV112", 17, 12, "binds a checker but has no `expect`"),
    (("requires: [cpu]", "requires: [cpu, tpu]"), "PV100", 20, 21, "unknown requirement 'tpu'"),
    (("requires: [cpu]", "requires: cuda_mem_gib>=lots"), "PV100", 20, 15, "requires"),
    (
        ("  obligation: ALPHA-INV-001\n    pred", "  obligation: ALPHA-INV-01\n    pred"),
        "PV124",
        15,
        17,
        "ALPHA-INV-001",
    ),
    (("    obligation: ALPHA-INV-001\n", "    obligation: NOPE-001\n", -1), "PV124", 23, 17, "Kani harness"),
    (("depends_on: []", "depends_on: [alpha-v2]"), "PV125", 6, 16, "`alpha-v2`"),
    (("depends_on: []", "depends_on: [alpha-v1]"), "PV126", 6, 16, "alpha-v1 -> alpha-v1"),
]


@pytest.mark.parametrize(("edit", "code", "line", "col", "fragment"), PER_FILE_CASES)
def test_rule_trips_at_the_right_place(
    tmp_path: Path, edit: tuple[str, ...], code: str, line: int, col: int, fragment: str
) -> None:
    text = make()
    if len(edit) == 3 and edit[2] == "all":
        text = text.replace(edit[0], edit[1])
    elif len(edit) == 3:  # replace the last occurrence
        head, _, tail = text.rpartition(edit[0])
        text = head + edit[1] + tail
    else:
        text = sub(text, edit[0], edit[1])
    report = run(tmp_path, {"alpha-v1.yaml": text})
    d = one(report, code)
    assert at(d) == ("alpha-v1.yaml", line, col), d.format()
    assert fragment in d.message
    assert d.hint
    assert report.exit_code == 1


def test_unresolved_obligation_suggests_the_close_id(tmp_path: Path) -> None:
    text = sub(make(), "  obligation: ALPHA-INV-001\n    pred", "  obligation: ALPHA-INV-01\n    pred")
    d = one(run(tmp_path, {"alpha-v1.yaml": text}), "PV124")
    assert "did you mean `ALPHA-INV-001`?" in d.message


def test_invalid_contract_id(tmp_path: Path) -> None:
    d = one(run(tmp_path, {"Alpha_V1.yaml": sub(make(), "id: alpha-v1", "id: Alpha_V1")}), "PV105")
    assert at(d) == ("Alpha_V1.yaml", 2, 7)
    assert "not a lower-case slug" in d.message


def test_stem_mismatch(tmp_path: Path) -> None:
    report = run(tmp_path, {"alpha.yaml": make()})
    d = one(report, "PV106")
    assert at(d) == ("alpha.yaml", 2, 7)
    assert "`alpha-v1` differs from the file stem `alpha`" in d.message


def test_empty_references_is_a_warning_and_strict_makes_it_an_error(tmp_path: Path) -> None:
    text = sub(make(), 'references: ["a paper"]', "references: []")
    report = run(tmp_path, {"alpha-v1.yaml": text})
    d = one(report, "PV108")
    assert at(d) == ("alpha-v1.yaml", 5, 15)
    assert d.severity is Severity.WARNING
    assert report.exit_code == 0
    assert report.summary().endswith("0 errors, 1 warning")
    strict = run(tmp_path, {"alpha-v1.yaml": text}, strict=True)
    assert one(strict, "PV108").severity is Severity.ERROR
    assert strict.exit_code == 1


def test_missing_references_points_at_metadata(tmp_path: Path) -> None:
    text = sub(make(), '  references: ["a paper"]\n', "")
    d = one(run(tmp_path, {"alpha-v1.yaml": text}), "PV108")
    assert (d.line, d.col) == (1, 1)


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    beta = make("beta-v1", "BETA")
    beta = sub(beta, "id: FALSIFY-BETA-001", "id: FALSIFY-ALPHA-001")
    beta = sub(beta, "  - id: BETA-INV-001", "  - id: ALPHA-INV-001")
    beta = sub(beta, "id: KANI-BETA-001", "id: KANI-ALPHA-001")
    report = run(tmp_path, {"alpha-v1.yaml": make(), "beta-v1.yaml": beta})
    got = {d.code: d for d in report.diagnostics}
    assert set(got) == {"PV121", "PV122", "PV123", "PV124"}  # BETA-INV-001 references now dangle
    assert at(got["PV121"]) == ("beta-v1.yaml", 14, 9)
    assert "already declared at" in got["PV121"].message and "alpha-v1.yaml:14" in got["PV121"].message
    assert at(got["PV122"]) == ("beta-v1.yaml", 10, 9)
    assert at(got["PV123"]) == ("beta-v1.yaml", 22, 9)


def test_duplicate_falsifier_within_one_file(tmp_path: Path) -> None:
    text = make() + ""
    text = sub(
        text,
        "kani_harnesses:",
        "  - id: FALSIFY-ALPHA-001\n    prediction: again\nkani_harnesses:",
    )
    d = one(run(tmp_path, {"alpha-v1.yaml": text}), "PV121")
    assert at(d) == ("alpha-v1.yaml", 21, 9)


def test_duplicate_contract_ids(tmp_path: Path) -> None:
    legacy = sub(make("x", "BETA"), "  id: x\n", "")  # no metadata.id: the stem is the id
    report = run(tmp_path, {"a/alpha-v1.yaml": make(), "b/alpha-v1.yaml": legacy})
    d = one(report, "PV120")
    assert at(d) == ("alpha-v1.yaml", 1, 1)
    assert "b/alpha-v1.yaml" in d.path.replace("\\", "/")


def test_dependency_cycle_reported_once_with_its_path(tmp_path: Path) -> None:
    files = {
        "a-v1.yaml": sub(make("a-v1", "AA"), "depends_on: []", "depends_on: [b-v1]"),
        "b-v1.yaml": sub(make("b-v1", "BB"), "depends_on: []", "depends_on: [c-v1]"),
        "c-v1.yaml": sub(make("c-v1", "CC"), "depends_on: []", "depends_on: [a-v1]"),
        "d-v1.yaml": sub(make("d-v1", "DD"), "depends_on: []", "depends_on: [a-v1, c-v1]"),
    }
    d = one(run(tmp_path, files), "PV126")
    assert at(d) == ("a-v1.yaml", 6, 16)
    assert d.message == "depends_on forms a cycle: a-v1 -> b-v1 -> c-v1 -> a-v1"


def test_diamond_dependencies_are_not_a_cycle(tmp_path: Path) -> None:
    files = {
        "a-v1.yaml": sub(make("a-v1", "AA"), "depends_on: []", "depends_on: [b-v1, c-v1]"),
        "b-v1.yaml": sub(make("b-v1", "BB"), "depends_on: []", "depends_on: [d-v1]"),
        "c-v1.yaml": sub(make("c-v1", "CC"), "depends_on: []", "depends_on: [d-v1]"),
        "d-v1.yaml": make("d-v1", "DD"),
    }
    assert run(tmp_path, files).diagnostics == []


def test_long_dependency_chain_does_not_recurse(tmp_path: Path) -> None:
    files = {}
    for i in range(1500):
        files[f"c{i}.yaml"] = sub(
            make(f"c{i}", f"C{i}"), "depends_on: []", f"depends_on: [c{i + 1}]" if i < 1499 else "depends_on: [c0]"
        )
    d = one(run(tmp_path, files), "PV126")
    assert d.message.count("->") == 1500


def test_single_file_resolves_sibling_dependency(tmp_path: Path) -> None:
    run(tmp_path, {"alpha-v1.yaml": make(), "beta-v1.yaml": sub(make("beta-v1", "BETA"), "[]", "[alpha-v1]")})
    report = validate_paths(
        [tmp_path / "contracts" / "beta-v1.yaml"], checker_packages=["falsifiers"], fault_packages=["engine"]
    )
    assert report.diagnostics == []
    assert report.n_contracts == 1


def test_one_bad_file_does_not_hide_the_others(tmp_path: Path) -> None:
    report = run(
        tmp_path,
        {
            "alpha-v1.yaml": sub(make(), 'expect: "0 < x <= 1"', 'expect: "x <"'),
            "broken.yaml": "metadata: [\n",
            "binary.yaml": "\x00\x01\x02",
            "gamma-v1.yaml": sub(make("gamma-v1", "GAMMA"), "version: 1.0.0\n  desc", "version: one\n  desc"),
        },
    )
    assert sorted(d.code for d in report.diagnostics) == ["PV002", "PV004", "PV104", "PV109"]
    assert report.n_contracts == 4
    assert report.n_falsifiers == 2


def test_schema_error_in_one_falsifier_does_not_hide_other_rules(tmp_path: Path) -> None:
    text = sub(make(), "    requires: [cpu]\n", "    requires: [cpu]\n    timeout: 5\n")
    text = sub(text, "depends_on: []", "depends_on: [nope]")
    report = run(tmp_path, {"alpha-v1.yaml": text})
    assert sorted(d.code for d in report.diagnostics) == ["PV102", "PV125"]
    unknown = found(report, "PV102")[0]
    assert (unknown.line, unknown.col) == (21, 5)
    assert "did you mean `timeout_s`?" in unknown.message


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    run(tmp_path, {"alpha-v1.yaml": make()})
    report = validate_paths(
        [tmp_path / "contracts", tmp_path / "nope"], checker_packages=["falsifiers"], fault_packages=["engine"]
    )
    assert [d.code for d in report.diagnostics] == ["PV001"]
    assert report.n_contracts == 1
    assert report.exit_code == 2


def test_validate_contracts_on_preloaded_files(tmp_path: Path) -> None:
    run(tmp_path, {"alpha-v1.yaml": make()})
    loaded = [load_contract_file(tmp_path / "contracts" / "alpha-v1.yaml")]
    report = validate_contracts(loaded, packages=["elsewhere"], fault_packages=["engine"])
    assert [d.code for d in report.diagnostics] == ["PV111"]
    # the mutant's module (engine.faults) must lie in a checker or fault package too
    report = validate_contracts(loaded, packages=["elsewhere"])
    assert [d.code for d in report.diagnostics] == ["PV111", "PV113"]
    assert validate_contracts([]).errors[0].code == "PV011"


def test_json_shape(tmp_path: Path) -> None:
    report = run(tmp_path, {"alpha-v1.yaml": sub(make(), "depends_on: []", "depends_on: [zzz]")})
    data = report.to_json()
    assert data["summary"]["errors"] == 1
    assert data["ok"] is False
    assert data["contracts"][0]["id"] == "alpha-v1"
    assert data["diagnostics"][0]["code"] == "PV125"
    assert data["diagnostics"][0]["line"] == 6


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, ("falsifiers",)),
        ({"pyproject.toml": '[tool.pv]\nchecker_packages = ["mine", "theirs"]\n'}, ("mine", "theirs")),
        ({"pyproject.toml": '[tool.pytest.ini_options]\npv_checker_packages = "a b"\n'}, ("a", "b")),
        ({"pytest.ini": "[pytest]\npv_checker_packages = c\n"}, ("c",)),
        ({"setup.cfg": "[tool:pytest]\npv_checker_packages = d, e\n"}, ("d", "e")),
    ],
)
def test_configured_checker_packages(tmp_path: Path, files: dict[str, str], expected: tuple[str, ...]) -> None:
    project = tmp_path / "project"
    (project / "contracts").mkdir(parents=True)
    (project / ".git").mkdir()
    for name, text in files.items():
        (project / name).write_text(text)
    if not files:
        (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert load_config(project / "contracts").checker_packages == expected


def test_configured_checker_package_accepts_the_check(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pv]\nchecker_packages = ["mycheckers"]\nfault_packages = ["engine"]\n'
    )
    (tmp_path / "contracts").mkdir()
    text = sub(make(), "check: falsifiers.alpha:measure", "check: mycheckers.alpha:measure")
    (tmp_path / "contracts" / "alpha-v1.yaml").write_text(text)
    assert validate_paths([tmp_path / "contracts"]).diagnostics == []
    d = one(
        validate_paths([tmp_path / "contracts"], checker_packages=["falsifiers"], fault_packages=["engine"]), "PV111"
    )
    assert d.line == 17
