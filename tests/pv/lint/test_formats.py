"""Output formats (text, json, sarif, github), --explain, and the command's exit codes."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

import pv
from pv.app import app
from pv.cli import COMMAND_MODULES
from pv.lint import LintReport
from pv.lint.formats import github, json_report, sarif, text

from .conftest import FIXTURES, Runner

# the real command set: with a single registered command Typer would collapse the group
for _module in COMMAND_MODULES:
    importlib.import_module(_module)

REPORT_SCHEMA = json.loads((Path(pv.__file__).parent / "schema" / "lint-report.schema.json").read_text())
SARIF_SCHEMA = json.loads((FIXTURES / "sarif-2.1.0-subset.schema.json").read_text())
Copy = Callable[[str], Path]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["lint", *args])
    return result.exit_code, result.output


# --- text --------------------------------------------------------------------------------------
def test_text_has_the_gate_table_findings_by_file_summary_and_result(run_fixture: Runner) -> None:
    out = text.render(run_fixture("references_fail"))
    lines = out.splitlines()
    assert lines[0] == "pv lint contracts (2 contract files)"
    table = lines[1:10]
    assert [re.split(r"\s+", line.strip())[:2] for line in table][:2] == [["✓", "validate"], ["✓", "binding"]]
    assert any(line.strip().startswith("✗ references") and "3 dependencies, 1 Kani harness" in line for line in table)
    assert all(re.search(r"\(\d+\.\d\ds\)$", line) for line in table)
    # grouped by file, each finding as path:line:col: CODE message
    assert "\ncontracts/iota.yaml\n  contracts/iota.yaml:6:16: PV126 depends_on forms a cycle" in out
    assert "\ncontracts/theta.yaml\n  contracts/theta.yaml:6:22: PV125 " in out
    assert lines[-2] == "Summary: 3 errors, 0 warnings, 3 new"  # no state: all new
    assert lines[-1] == "Result: FAIL"


def test_text_marks_skipped_gates_warnings_and_new_findings(tree_copy: Copy) -> None:
    code, out = invoke(str(tree_copy("validate_fail") / "contracts"))
    assert code == 1
    assert re.search(r"^  - binding\s+skipped \(validate failed\)$", out, re.M)
    assert "PV102 unknown key `falsification_test`" in out and "[NEW]" in out
    assert "Summary: 1 errors, 0 warnings, 1 new" in out

    code, out = invoke(str(tree_copy("binding_fail") / "contracts"))
    assert code == 1 and "[warning] [NEW]" in out and "4 errors, 1 warnings" in out and out.endswith("Result: FAIL\n")


# --- json --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["good", "validate_fail", "binding_fail", "duplicates_fail", "status_fail"])
def test_json_report_matches_its_published_schema(run_fixture: Runner, case: str) -> None:
    data = json.loads(json_report.render(run_fixture(case)))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    assert data["schema"] == "pv-lint-report" and data["version"] == 1


def test_json_schema_rejects_a_malformed_report(run_fixture: Runner) -> None:
    data = json.loads(json_report.render(run_fixture("observations_fail")))
    data["findings"][0]["line"] = "13"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)


def test_json_carries_counts_findings_and_result(run_fixture: Runner) -> None:
    data = json.loads(json_report.render(run_fixture("falsifiability_fail")))
    assert data["result"] == "FAIL" and data["exit_code"] == 1
    gate = next(g for g in data["gates"] if g["name"] == "falsifiability")
    assert gate["state"] == "failed" and gate["counts"] == {"resolved": 0, "ship_blocking": 2, "with_mutant": 1}
    assert [(f["code"], f["line"], f["col"]) for f in data["findings"]] == [("PVL401", 13, 20), ("PVL402", 19, 13)]
    assert data["summary"]["errors"] == 2


# --- sarif -------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["good", "observations_fail", "binding_orphan", "duplicates_fail"])
def test_sarif_validates_against_the_sarif_2_1_0_schema(run_fixture: Runner, case: str) -> None:
    data = json.loads(sarif.render(run_fixture(case)))
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(data)
    assert data["version"] == "2.1.0"


def test_sarif_results_carry_rule_location_fingerprint_and_baseline_state(tree_copy: Copy) -> None:
    from .conftest import lint_dir

    root = tree_copy("observations_fail")
    baseline = root / "b.json"
    lint_dir(root, baseline=baseline, write_baseline=True)
    report = lint_dir(root, baseline=baseline)
    data = sarif.to_dict(report)
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(data)
    run = data["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["PV112", "PVL301"]
    first = run["results"][0]
    assert first["ruleId"] == "PVL301" and rules[first["ruleIndex"]] == "PVL301"
    assert first["level"] == "error" and first["baselineState"] == "unchanged"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "contracts/epsilon.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 13, "startColumn": 13},
    }
    assert first["partialFingerprints"][sarif.FINGERPRINT_KEY] == report.findings[0].fingerprint
    assert first["suppressions"][0]["kind"] == "external"


def test_sarif_schema_rejects_what_code_scanning_would(run_fixture: Runner) -> None:
    data = sarif.to_dict(run_fixture("observations_fail"))
    data["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SARIF_SCHEMA).validate(data)
    data = sarif.to_dict(run_fixture("observations_fail"))
    data["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SARIF_SCHEMA).validate(data)


# --- github ------------------------------------------------------------------------------------
def test_github_annotations(run_fixture: Runner) -> None:
    lines = github.render(run_fixture("binding_fail")).splitlines()
    assert lines[0].startswith("::error file=contracts/delta.yaml,line=12,col=12,title=PVL202 (new)::PVL202 ")
    missing_check = "file=contracts/delta.yaml,line=14,col=5,title=PVL201 (new)::"
    assert any(line.startswith("::warning " + missing_check) for line in lines)
    strict = github.render(run_fixture("binding_fail", strict_test_binding=True)).splitlines()
    assert any(line.startswith("::error " + missing_check) for line in strict)
    assert strict[-1] == "Result: FAIL"


def test_github_escapes_newlines_percent_and_property_separators(run_fixture: Runner) -> None:
    report: LintReport = run_fixture("observations_fail")
    g = report.gates[2]
    g.findings = [g.findings[0].with_(message="50% of\nit", path="a,b:c.yaml")]
    out = github.render(report)
    assert "file=a%2Cb%3Ac.yaml" in out and "50%25 of%0Ait" in out


# --- the command -------------------------------------------------------------------------------
def test_exit_codes(tree_copy: Copy) -> None:
    assert invoke(str(tree_copy("good") / "contracts"))[0] == 0
    assert invoke(str(tree_copy("coverage_fail") / "contracts"))[0] == 1
    orphan = str(tree_copy("binding_orphan") / "contracts")
    assert invoke(orphan)[0] == 0
    assert invoke(orphan, "--strict")[0] == 1
    assert invoke("--format", "yaml")[0] == 2
    assert invoke(str(FIXTURES / "no-such-dir"))[0] == 2
    assert invoke(orphan, "--write-baseline")[0] == 2
    assert invoke(orphan, "--baseline", str(FIXTURES / "missing-baseline.json"))[0] == 2


def test_internal_errors_exit_2(tree_copy: Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    import pv.lint.runner

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pv.lint.runner, "run_lint", boom)
    code, out = invoke(str(tree_copy("good") / "contracts"))
    assert code == 2 and "internal error" in out and "RuntimeError: boom" in out


def test_bad_tool_pv_config_is_a_usage_error(tree_copy: Copy) -> None:
    root = tree_copy("good")
    (root / "pyproject.toml").write_text('[tool.pv]\ncontract = "contracts"\n')
    code, out = invoke(str(root / "contracts"))
    assert code == 2 and "did you mean 'contracts'" in out


def test_format_and_output_options(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    out_file = root / "lint.sarif"
    code, out = invoke(str(root / "contracts"), "--format", "sarif", "--output", str(out_file))
    assert code == 1 and "FAIL" in out
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(json.loads(out_file.read_text()))
    code, out = invoke(str(root / "contracts"), "-f", "json")
    assert code == 1 and json.loads(out)["result"] == "FAIL"


def test_explain_covers_lint_and_validate_codes_and_gates() -> None:
    code, out = invoke("--explain", "PVL401")
    assert code == 0 and out.startswith("PVL401 (no-mutant, error)") and "Fix:" in out
    code, out = invoke("--explain", "pv102")
    assert code == 0 and "unknown-key" in out
    code, out = invoke("--explain", "unknown-observation")
    assert code == 0 and out.startswith("PVL301")
    code, out = invoke("--explain", "binding")
    assert code == 0 and "PVL201" in out and "PV111" in out
    code, out = invoke("--explain", "PVL999")
    assert code == 2 and "unknown rule code" in out


def test_every_lint_code_has_an_explanation_and_a_gate_that_reports_it() -> None:
    from pv import rules
    from pv.lint.runner import GATE_NAMES

    lint_codes = [code for code in rules.RULES if code.startswith("PVL")]
    assert len(lint_codes) >= 18
    for code in lint_codes:
        rule = rules.RULES[code]
        assert rule.summary and rule.explanation and rule.hint
        assert rule.gate in GATE_NAMES and rule.gate != "validate", code
    # validate's cross-file codes are each claimed by the gate that reports them
    routed = {code: rules.gate_of(code) for code in ("PV111", "PV112", "PV120", "PV124", "PV125", "PV127")}
    assert routed == {
        "PV111": "binding",
        "PV112": "observations",
        "PV120": "duplicates",
        "PV124": "coverage",
        "PV125": "references",
        "PV127": "binding",
    }


def test_explaining_a_gate_lists_the_codes_it_owns() -> None:
    from pv.lint.explain import explain

    text = explain("binding") or ""
    assert text.startswith("gate binding:")
    assert "PV111" in text and "PVL201" in text and "PVL301" not in text
