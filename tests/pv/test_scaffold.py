"""pv scaffold: stubs that are registered, typed and bound, that fail until written, and never overwrite."""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pv.checkers import resolve
from pv.validate import validate_paths

from .cli_trees import Invoke

PYPROJECT = '[tool.pv]\ncontracts = "specs"\nchecker_packages = ["scafchecks"]\n'


def falsifier(fid: str, **fields: Any) -> dict[str, Any]:
    return {"id": fid, "rule": f"rule of {fid}", "prediction": f"prediction of {fid}", **fields}


def write_contract(root: Path, cid: str, falsifiers: list[dict[str, Any]]) -> Path:
    data = {
        "metadata": {"id": cid, "version": "1.0.0", "description": "d", "references": ["r"]},
        "falsification_tests": falsifiers,
    }
    path = root / "specs" / f"{cid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(autouse=True)
def _forget_scaffolded_modules() -> Iterator[None]:
    # every test writes its own `scafchecks` package; an imported one must not outlive its test
    yield
    for name in [m for m in sys.modules if m == "scafchecks" or m.startswith("scafchecks.")]:
        del sys.modules[name]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.syspath_prepend(str(root))
    return root


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_a_falsifier_without_check_gets_a_derived_typed_stub(cli: Invoke, project: Path) -> None:
    params = {"n": 3, "rate": 0.5, "name": "x", "flag": True, "dims": [1, 2], "seed": 0}
    contract = write_contract(
        project, "gamma-v1", [falsifier("FALSIFY-GAMMA-001", params=params, expect="value <= n and spread < rate")]
    )
    code, out = cli("scaffold", str(contract), cwd=project)
    assert code == 0, out
    assert "FALSIFY-GAMMA-001 has no check: add this line" in out
    assert "    check: scafchecks.gamma_v1:falsify_gamma_001" in out
    module = project / "scafchecks" / "gamma_v1.py"
    assert "wrote scafchecks/gamma_v1.py: falsify_gamma_001 for FALSIFY-GAMMA-001" in out
    assert (project / "scafchecks" / "__init__.py").is_file()
    assert ast.get_docstring(ast.parse(module.read_text()))

    fn = _function(module, "falsify_gamma_001")
    assert not fn.args.args and [a.arg for a in fn.args.kwonlyargs] == list(params)
    annotations = {a.arg: ast.unparse(a.annotation) for a in fn.args.kwonlyargs if a.annotation is not None}
    assert annotations == {
        "n": "int",
        "rate": "float",
        "name": "str",
        "flag": "bool",
        "dims": "list[Any]",
        "seed": "int",
    }

    spec = resolve("scafchecks.gamma_v1:falsify_gamma_001", ["scafchecks"])
    assert spec.observes == ("spread", "value") and spec.ids == ("FALSIFY-GAMMA-001",)
    with pytest.raises(RuntimeError, match=r"FALSIFY-GAMMA-001: checker .* is a scaffold"):
        spec.func(**params)


def test_falsifiers_sharing_a_checker_get_one_stub(cli: Invoke, project: Path) -> None:
    ref = "scafchecks.shared:measure"
    contract = write_contract(
        project,
        "delta-v1",
        [
            falsifier("FALSIFY-DELTA-001", check=ref, params={"n": 1}, expect="a > n"),
            falsifier("FALSIFY-DELTA-002", check=ref, params={"n": 2.5, "k": "x"}, expect="b > n"),
        ],
    )
    code, out = cli("scaffold", str(contract), cwd=project)
    assert code == 0, out
    spec = resolve(ref, ["scafchecks"])
    assert spec.ids == ("FALSIFY-DELTA-001", "FALSIFY-DELTA-002") and spec.observes == ("a", "b")
    fn = _function(project / "scafchecks" / "shared.py", "measure")
    shown = ", ".join(ast.unparse(a) for a in fn.args.kwonlyargs)
    assert shown == "n: float, k: str | None"
    default = fn.args.kw_defaults[1]
    assert default is not None and ast.unparse(default) == "None"


EXISTING = '''"""Checkers someone already wrote."""

import math

from pv.checkers import checker


@checker(observes=["value"], ids=["FALSIFY-EPS-001"])
def written(n: int):
    return {"value": math.sqrt(n)}


def unregistered():
    return {"value": 1}
'''


def test_stubs_are_appended_and_nothing_is_overwritten(cli: Invoke, project: Path) -> None:
    pkg = project / "scafchecks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    module = pkg / "eps.py"
    module.write_text(EXISTING)
    contract = write_contract(
        project,
        "eps-v1",
        [
            falsifier("FALSIFY-EPS-001", check="scafchecks.eps:written", params={"n": 4}, expect="value == 2"),
            falsifier("FALSIFY-EPS-002", check="scafchecks.eps:fresh", expect="value > 0"),
            falsifier("FALSIFY-EPS-003", check="scafchecks.eps:unregistered", expect="value > 0"),
        ],
    )
    code, out = cli("scaffold", str(contract), cwd=project)
    assert code == 1
    assert "FALSIFY-EPS-001: bound to scafchecks.eps:written, nothing to do" in out
    assert "wrote scafchecks/eps.py: fresh for FALSIFY-EPS-002" in out
    assert "scafchecks.eps:unregistered already exists" in out and "not overwritten" in out
    text = module.read_text()
    # the file as it was, with only the missing import added after the last import, then the stub
    checker_import = "from pv.checkers import checker\n"
    assert text.startswith(EXISTING.replace(checker_import, checker_import + "from typing import Any\n", 1).rstrip())
    assert text.count("def unregistered") == 1 and text.count("def written") == 1
    assert "def fresh() -> dict[str, Any]:" in text

    before = module.read_text()
    sys.modules.pop("scafchecks.eps", None)
    code, out = cli("scaffold", str(contract), "--falsifier", "FALSIFY-EPS-002", cwd=project)
    assert code == 0 and "FALSIFY-EPS-002: bound to scafchecks.eps:fresh, nothing to do" in out
    assert module.read_text() == before


def test_one_falsifier_only(cli: Invoke, project: Path) -> None:
    contract = write_contract(
        project,
        "zeta-v1",
        [falsifier("FALSIFY-ZETA-001", expect="x > 0"), falsifier("FALSIFY-ZETA-002", expect="y > 0")],
    )
    code, out = cli("scaffold", str(contract), "--falsifier", "FALSIFY-ZETA-002", cwd=project)
    assert code == 0, out
    text = (project / "scafchecks" / "zeta_v1.py").read_text()
    assert "def falsify_zeta_002" in text and "falsify_zeta_001" not in text
    code, out = cli("scaffold", str(contract), "--falsifier", "FALSIFY-ZETA-003", cwd=project)
    assert code == 2 and "declares no falsifier FALSIFY-ZETA-003" in out and "did you mean FALSIFY-ZETA-00" in out


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        (falsifier("FALSIFY-ETA-001", check="os:system", expect="x > 0"), "outside the checker packages"),
        (falsifier("FALSIFY-ETA-001", params={"learning-rate": 1}, expect="x > 0"), "is not a Python identifier"),
        (falsifier("FALSIFY-ETA-001", params={"class": 1}, expect="x > 0"), "is not a Python identifier"),
        (falsifier("FALSIFY-ETA-001", expect="x >"), "expect does not parse"),
    ],
)
def test_falsifiers_that_cannot_be_scaffolded_exit_1(
    cli: Invoke, project: Path, entry: dict[str, Any], fragment: str
) -> None:
    contract = write_contract(project, "eta-v1", [entry])
    code, out = cli("scaffold", str(contract), cwd=project)
    assert code == 1 and fragment in out
    assert not (project / "scafchecks").exists()


def test_bad_input_is_a_usage_error(cli: Invoke, project: Path) -> None:
    code, out = cli("scaffold", "specs/missing.yaml", cwd=project)
    assert code == 2 and "no such file" in out
    (project / "specs").mkdir()
    (project / "specs" / "list.yaml").write_text("- a\n- b\n")
    code, out = cli("scaffold", "specs/list.yaml", cwd=project)
    assert code == 2 and "is not a valid contract" in out and "PV005" in out
    code, out = cli("scaffold", cwd=project)
    assert code == 2 and "name a CONTRACT file, or use --new NAME" in out
    code, out = cli("scaffold", "specs/list.yaml", "--new", "x-v1", cwd=project)
    assert code == 2 and "--new takes no CONTRACT" in out
    (project / "pyproject.toml").write_text('[tool.pv]\ncontract = "specs"\n')
    code, out = cli("scaffold", "specs/list.yaml", cwd=project)
    assert code == 2 and "did you mean 'contracts'" in out


# --- --new -----------------------------------------------------------------------------------------


def test_new_contract_validates_and_its_stub_follows(cli: Invoke, project: Path) -> None:
    code, out = cli("scaffold", "--new", "my-claim-v1", cwd=project)
    assert code == 0 and "wrote specs/my-claim-v1.yaml" in out
    path = project / "specs" / "my-claim-v1.yaml"
    report = validate_paths([path], strict=True, checker_packages=["scafchecks"])
    assert report.diagnostics == [] and report.n_falsifiers == 1 and report.n_obligations == 1
    data = yaml.safe_load(path.read_text())
    assert data["metadata"]["id"] == "my-claim-v1" and data["metadata"]["status"] == "DRAFT"
    assert data["falsification_tests"][0]["id"] == "FALSIFY-MY-CLAIM-001"
    assert data["falsification_tests"][0]["check"] == "scafchecks.my_claim_v1:falsify_my_claim_001"

    code, out = cli("scaffold", "specs/my-claim-v1.yaml", cwd=project)
    assert code == 0 and "wrote scafchecks/my_claim_v1.py: falsify_my_claim_001" in out
    assert resolve("scafchecks.my_claim_v1:falsify_my_claim_001", ["scafchecks"]).observes == ("value",)
    assert validate_paths([path], strict=True, checker_packages=["scafchecks"]).diagnostics == []

    before = path.read_text()
    code, out = cli("scaffold", "--new", "my-claim-v1", cwd=project)
    assert code == 1 and "already exists; not overwritten" in out
    assert path.read_text() == before


@pytest.mark.parametrize("name", ["My Claim", "x.yaml", "-lead", ""])
def test_new_refuses_names_that_are_not_contract_ids(cli: Invoke, project: Path, name: str) -> None:
    code, out = cli("scaffold", "--new", name, cwd=project)
    assert code == 2 and "is not a contract id" in out
    assert not (project / "specs").exists()


# --- the stub fails until written ------------------------------------------------------------------


def test_a_scaffolded_checker_is_an_error_until_written(cli: Invoke, pytester: pytest.Pytester) -> None:
    # The harness seeds numpy and torch; pytester's in-process runs restore sys.modules afterwards and
    # C extensions cannot be imported twice, so they are loaded here first.
    for module in ("numpy", "torch"):
        with contextlib.suppress(ImportError):
            __import__(module)
    pytester.makepyprojecttoml(
        PYPROJECT
        + '\n[tool.pytest.ini_options]\npv_contracts = "specs"\npv_checker_packages = "scafchecks"\n'
        + 'pythonpath = "."\naddopts = "--pv-no-evidence"\n'
    )
    contract = write_contract(
        pytester.path,
        "theta-v1",
        [falsifier("FALSIFY-THETA-001", check="scafchecks.theta:level", params={"n": 3}, expect="level == n")],
    )
    code, out = cli("scaffold", str(contract), cwd=pytester.path)
    assert code == 0, out

    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*ERROR theta-v1::FALSIFY-THETA-001: the checker raised*", "*RuntimeError: FALSIFY-THETA-001: checker*"]
    )
    assert "FALSIFIED" not in result.stdout.str()

    stub = pytester.path / "scafchecks" / "theta.py"
    text = stub.read_text()
    body = text[text.index("    raise RuntimeError(") :]
    stub.write_text(text.replace(body, "    return {'level': n}\n"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
