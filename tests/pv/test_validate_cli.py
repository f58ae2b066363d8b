"""``pv validate`` and ``pv schema`` on the command line: output, formats and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

import pv.commands.validate as validate_cmd
from pv.app import app
from pv.loader import load_contract_file

from .test_validate import make, sub

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
RUST_FIXTURES = ROOT / "tests" / "fixtures" / "validate" / "rust"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.pv]\nfault_packages = ["engine"]\n')
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "alpha-v1.yaml").write_text(make())
    return tmp_path


def test_clean_tree_text_output(tree: Path) -> None:
    result = runner.invoke(app, ["validate"])  # default path: contracts/
    assert result.exit_code == 0, result.output
    assert result.output == "1 contract, 1 falsifier, 1 obligation: 0 errors, 0 warnings\n"


def test_errors_exit_1_with_path_line_col_and_hint(tree: Path) -> None:
    (tree / "contracts" / "alpha-v1.yaml").write_text(sub(make(), "falsification_tests:", "falsification_test:"))
    result = runner.invoke(app, ["validate", "contracts"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == (
        "contracts/alpha-v1.yaml:13:1: PV102 unknown key `falsification_test` in (top level); "
        "did you mean `falsification_tests`?"
    )
    assert lines[1] == "    hint: did you mean `falsification_tests`?"
    assert lines[-1].startswith("1 contract, 0 falsifiers, 1 obligation: ")
    assert "\x1b[" not in result.output  # no colour when not a terminal


def test_warnings_exit_0_unless_strict(tree: Path) -> None:
    (tree / "contracts" / "alpha-v1.yaml").write_text(sub(make(), '["a paper"]', "[]"))
    result = runner.invoke(app, ["validate", "contracts"])
    assert result.exit_code == 0
    assert "PV108" in result.output and result.output.rstrip().endswith("0 errors, 1 warning")
    strict = runner.invoke(app, ["validate", "contracts", "--strict"])
    assert strict.exit_code == 1
    assert strict.output.rstrip().endswith("1 error, 0 warnings")


def test_json_format(tree: Path) -> None:
    (tree / "contracts" / "broken.yaml").write_text("metadata: [\n")
    result = runner.invoke(app, ["validate", "contracts", "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["summary"] == {"contracts": 2, "falsifiers": 1, "obligations": 1, "errors": 1, "warnings": 0}
    assert [d["code"] for d in data["diagnostics"]] == ["PV004"]
    assert data["diagnostics"][0]["path"] == "contracts/broken.yaml"


def test_zero_contracts_and_missing_paths(tree: Path) -> None:
    (tree / "empty").mkdir()
    result = runner.invoke(app, ["validate", "empty"])
    assert result.exit_code == 1
    assert "PV011" in result.output
    assert result.output.rstrip().endswith("0 contracts, 0 falsifiers, 0 obligations: 1 error, 0 warnings")
    missing = runner.invoke(app, ["validate", "contracts", "nowhere"])
    assert missing.exit_code == 2
    assert "nowhere:0:0: PV001 nowhere does not exist" in missing.output
    assert "1 contract," in missing.output


def test_usage_errors_exit_2(tree: Path) -> None:
    assert runner.invoke(app, ["validate", "--format", "xml"]).exit_code == 2
    assert runner.invoke(app, ["validate", "--no-such-flag"]).exit_code == 2


def test_bad_configuration_exits_2(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.pv]\nchecker_pakages = ["x"]\n')
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2
    assert "checker_pakages" in result.output


def test_checker_package_option(tree: Path) -> None:
    result = runner.invoke(app, ["validate", "--checker-package", "elsewhere"])
    assert result.exit_code == 1
    assert "PV111" in result.output


def test_console_script_end_to_end(tree: Path) -> None:
    (tree / "contracts" / "bad.yaml").write_bytes(b"\xff\xfe not utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pv.cli", "validate", "contracts", str(RUST_FIXTURES)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert "contracts/bad.yaml:1:1: PV002" in proc.stdout
    assert proc.stdout.rstrip().endswith("5 contracts, 6 falsifiers, 8 obligations: 1 error, 0 warnings")


def test_schema_command_matches_the_committed_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    committed = (ROOT / "pv" / "schema" / "contract.schema.json").read_text(encoding="utf-8")
    assert result.output == committed, "regenerate with: pv schema -o pv/schema/contract.schema.json"
    out = tmp_path / "sub" / "contract.schema.json"
    assert runner.invoke(app, ["schema", "-o", str(out)]).exit_code == 0
    assert out.read_text(encoding="utf-8") == committed


def test_schema_accepts_valid_contracts_and_rejects_unknown_keys() -> None:
    schema = validate_cmd.contract_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(RUST_FIXTURES.glob("*.yaml")):
        data = load_contract_file(path).data
        assert list(validator.iter_errors(data)) == [], path.name
    good = yaml.safe_load(make())
    assert list(validator.iter_errors(good)) == []
    bad = dict(good, falsification_test=good["falsification_tests"])
    errors = list(validator.iter_errors(bad))
    assert errors and "falsification_test" in errors[0].message
