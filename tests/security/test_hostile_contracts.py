"""A contract is data: it cannot make pv import code, hide from the gates, or take over the machine.

One test per finding of the audit; each fails on the code before the fix.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pv.app import app
from pv.cli import COMMAND_MODULES
from pv.config import load_config
from pv.evidence.writer import EvidenceError, contract_dir_for
from pv.faults import resolve_mutant
from pv.lint import LintOptions, lint
from pv.run_checker import call_with_timeout
from pv.validate import validate_paths
from tests.security.conftest import Hostile

for _module in COMMAND_MODULES:
    __import__(_module)

runner = CliRunner()


def pv(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


# --- 1. mutant: and requires: package: import nothing outside the trusted packages ----------


def test_a_mutant_outside_the_packages_is_an_error_and_never_imported(hostile: Hostile) -> None:
    path = hostile.contract("evil-v1", [{"id": "FALSIFY-EVIL-001", "ship_blocking": True, "mutant": "evilmod:x"}])
    code, out = pv("validate", "contracts")
    assert code == 1 and "PV113" in out and f"{path.relative_to(hostile.root)}:" in out.replace("\\", "/"), out
    line = next(ln for ln in out.splitlines() if "PV113" in ln)
    assert ":13:" in line or line.split(":")[1].isdigit()  # path:line:col
    lint(load_config(hostile.root), LintOptions(use_state=False))
    result = hostile.pytester.runpytest("--pv-mutants")
    assert result.ret == 1
    assert hostile.imported() == []


def test_resolve_mutant_refuses_before_importing() -> None:
    sys.modules.pop("antigravity", None)
    with pytest.raises(LookupError, match="outside the checker and fault packages"):
        resolve_mutant("antigravity:x", ["falsifiers", "engine"])
    assert "antigravity" not in sys.modules


def test_a_dotted_package_requirement_is_an_error_and_imports_nothing(hostile: Hostile) -> None:
    hostile.contract("req-v1", [{"id": "FALSIFY-REQ-001", "requires": ["package:evilpkg.sub"]}])
    code, out = pv("validate", "contracts")
    assert code == 1 and "one top-level package" in out
    hostile.pytester.runpytest()
    lint(load_config(hostile.root), LintOptions(use_state=False))
    assert hostile.imported() == []


# --- 2. hidden files: one discovery for every command; evidence stays in evidence/ ----------


def test_hidden_contract_files_are_skipped_by_pytest_as_by_validate(hostile: Hostile) -> None:
    hostile.contract("ok-v1", [{"id": "FALSIFY-OK-001"}])
    for name in (".evil", ".."):
        src = (hostile.root / "contracts" / "ok-v1.yaml").read_text().replace("ok-v1", "evil-v1")
        (hostile.root / "contracts" / f"{name}.yaml").write_text(src.replace("FALSIFY-OK-001", "FALSIFY-EVIL-001"))
    code, out = pv("validate", "contracts")
    assert code == 0 and "1 contract," in out, out
    result = hostile.pytester.runpytest("--collect-only", "-q", "contracts")
    collected = [ln for ln in result.outlines if "::" in ln]
    assert collected == ["contracts/ok-v1.yaml::FALSIFY-OK-001"], result.outlines


@pytest.mark.parametrize("cid", ["..", ".", "../outside", "a/b", ".hidden", ""])
def test_evidence_paths_cannot_leave_the_evidence_folder(tmp_path: Path, cid: str) -> None:
    with pytest.raises(EvidenceError):
        contract_dir_for(tmp_path / "evidence", cid)
    assert contract_dir_for(tmp_path / "evidence", "ok-v1") == tmp_path / "evidence" / "ok-v1"


# --- 3. params never replace fixtures -------------------------------------------------------


def test_a_param_named_like_a_fixture_is_an_error(hostile: Hostile) -> None:
    hostile.contract(
        "fix-v1", [{"id": "FALSIFY-FIX-001", "check": "secchecks.checks:takes_path", "params": {"tmp_path": "/etc"}}]
    )
    result = hostile.pytester.runpytest("-rA")
    assert result.ret == 1
    # refused when the contract is read (PV127, as validate and lint say), before anything runs
    result.stdout.fnmatch_lines(["*PV127*`tmp_path` has the name of a pytest fixture*"])


# --- 4. launch: nproc is capped -------------------------------------------------------------


def test_launch_nproc_is_capped_and_configurable(hostile: Hostile) -> None:
    hostile.contract("ranks-v1", [{"id": "FALSIFY-RANKS-001", "launch": {"nproc": 1024}}])
    code, out = pv("validate", "contracts")
    assert code == 1 and "PV114" in out and "the cap is 8" in out
    result = hostile.pytester.runpytest()  # collected as an invalid contract: it never launches
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*PV114*"])
    pyproject = hostile.root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "max_nproc = 2000\n")
    code, out = pv("validate", "contracts")
    assert "PV114" not in out


# --- 5. numbers are bounded; every command stays clean -------------------------------------


def test_a_huge_integer_is_a_diagnostic_in_every_command(hostile: Hostile) -> None:
    path = hostile.contract("huge-v1", [{"id": "FALSIFY-HUGE-001"}])
    path.write_text(path.read_text().replace("version: 1.0.0", "version: 0x" + "f" * 4000, 1))
    code, out = pv("validate", "contracts")
    assert code == 1 and "out of range" in out and "Traceback" not in out
    for args in (["lint"], ["status"], ["report"], ["promote", "--check"]):
        code, out = pv(*args)
        assert code in (0, 1, 2) and "Traceback" not in out and "internal error" not in out, (args, out)
    result = hostile.pytester.runpytest()
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*INVALID*huge-v1*"])


# --- 6. timeouts are hard; a late result is never a pass ------------------------------------


def test_a_checker_holding_the_gil_past_its_deadline_is_not_a_result() -> None:
    def hog() -> dict[str, float]:
        x = 7 ** (3 * 10**6)  # one C call: the GIL is not released until it returns
        return {"value": float(x > 0)}

    start = time.perf_counter()
    hog()
    once = time.perf_counter() - start
    outcome = call_with_timeout(hog, {}, timeout_s=once / 10)
    assert outcome.timed_out and outcome.value is None


def test_a_hung_checker_and_its_children_are_killed_at_the_deadline(tmp_path: Path) -> None:
    from pv.run_checker import call_in_process

    pid_file = tmp_path / "child.pid"

    def hang() -> dict[str, float]:
        child = subprocess.Popen(["sleep", "300"])
        pid_file.write_text(str(child.pid))
        time.sleep(300)
        return {"value": 1.0}

    outcome = call_in_process(hang, {}, timeout_s=1.0)
    assert outcome.timed_out and outcome.killed and outcome.value is None
    child = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            return  # killed, waiting for init to reap it
        time.sleep(0.1)
    pytest.fail(f"the checker's child {child} outlived the deadline")


# --- 7. promote is safe to run twice at once ------------------------------------------------


PROMOTE_TWICE = """
import subprocess, sys
procs = [subprocess.Popen([sys.executable, "-m", "pv.cli", "promote"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE) for _ in range(2)]
errs = [p.communicate()[1].decode() for p in procs]
print(max(p.returncode for p in procs))
print("|".join(errs))
"""


def test_two_promotes_at_once_write_one_changelog_entry(promotable: Path) -> None:
    contract = promotable / "contracts" / "demo-v1.yaml"
    original = contract.read_text()
    for _ in range(5):
        contract.write_text(original)
        done = subprocess.run(
            [sys.executable, "-c", PROMOTE_TWICE], cwd=promotable, capture_output=True, text=True, check=True
        )
        assert done.stdout.splitlines()[0] == "0", done.stdout  # neither failed
        text = contract.read_text()
        assert text.count("status DRAFT -> ACTIVE") == 1, text  # and only one wrote
        assert "status: ACTIVE" in text
        assert not list(contract.parent.glob(".*")), "a temporary file was left behind"


def test_promote_keeps_mode_and_symlink_and_refuses_a_file_changed_since(promotable: Path) -> None:
    from pv.promote import PromoteError, apply, decide

    real = promotable / "real-demo.yaml"
    contract = promotable / "contracts" / "demo-v1.yaml"
    real.write_text(contract.read_text())
    contract.unlink()
    contract.symlink_to(real)
    os.chmod(real, 0o640)
    decision = decide(contract, promotable / "evidence", promotable)
    real.write_text(real.read_text() + "# an edit after the decision\n")
    with pytest.raises(PromoteError, match="changed since the decision"):
        apply(decision, root=promotable)
    decision = decide(contract, promotable / "evidence", promotable)
    apply(decision, root=promotable)
    assert contract.is_symlink() and "status: ACTIVE" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


@pytest.fixture
def promotable(tmp_path: Path) -> Path:
    from pv.evidence.writer import write_run
    from pv.results import Verdict
    from tests.pv.evidence.conftest import CONTRACT, ENV, IDS, Project, record, result

    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "demo-v1.yaml").write_text(CONTRACT)
    (tmp_path / "pyproject.toml").write_text('[tool.pv]\ncontracts = "contracts"\nfault_packages = ["engine"]\n')
    project = Project(tmp_path, tmp_path / "contracts" / "demo-v1.yaml", tmp_path / "evidence")
    [outcome] = write_run(record(project, [result(i, Verdict.SURVIVED) for i in IDS]), project.evidence, tmp_path, ENV)
    assert outcome.path is not None
    return tmp_path


# --- 8. large contracts are parsed once -----------------------------------------------------


def test_a_large_contract_is_composed_once_by_validate_and_lint(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml as pyyaml

    path = hostile.contract("big-v1", [{"id": "FALSIFY-BIG-001"}], references=["x"] * 60_000)
    assert path.stat().st_size > 250_000
    calls: list[int] = []
    real = pyyaml.compose

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pyyaml, "compose", counting)
    validate_paths([path])
    assert len(calls) == 1
    calls.clear()
    lint(load_config(hostile.root), LintOptions(use_state=False))
    assert len(calls) == 1, "the tree was composed again to locate a finding"


# --- 9. engine outputs honour the umask -----------------------------------------------------


def test_engine_outputs_get_the_umask_mode(tmp_path: Path) -> None:
    from engine.atomic import atomic_dir, write_atomic

    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "model.safetensors", b"x")
        with atomic_dir(tmp_path / "export") as d:
            (d / "config.json").write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "model.safetensors").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "export").stat().st_mode) == 0o755


def test_security_suite_covers_each_finding() -> None:
    """A guard against a finding losing its test in a refactor."""
    names = [n for n in globals() if n.startswith("test_")]
    assert len(names) >= 12 and json.dumps(sorted(names))
    assert yaml.safe_load("a: 1") == {"a": 1}


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": -1}, "timeout_s"),
        ({"timeout_s": ".inf"}, "timeout_s"),
        ({"hypothesis": {"max_examples": 10**9}}, "max_examples"),
        ({"hypothesis": {"deadline_ms": 0}}, "deadline_ms"),
    ],
)
def test_run_settings_in_a_contract_are_bounded(hostile: Hostile, entry: dict[str, object], where: str) -> None:
    path = hostile.contract("bound-v1", [{"id": "FALSIFY-BOUND-001", **entry}])
    if entry.get("timeout_s") == ".inf":
        path.write_text(path.read_text().replace("'.inf'", ".inf"))  # the YAML float, not a string
    code, out = pv("validate", "contracts")
    assert code == 1 and where in out, out
