"""Crash-safe evidence: verdicts journaled as they arrive, crashes recorded as errors, switches recorded."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import pytest
import yaml

from pv.evidence.journal import JOURNAL_DIR, orphans, recover_all
from pv.evidence.verify import find_bundles, verify_bundle
from tests.pv.evidence.conftest import ENV

for _module in ("numpy", "torch"):  # see test_pytest_e2e: C extensions load once
    with contextlib.suppress(ImportError):
        __import__(_module)

CHECKERS = """
import os
import subprocess
import time

from pv.checkers import checker


@checker(observes=["value"])
def measure(n, crash_at=-1, how="exit"):
    if n == crash_at:
        if how == "exit":
            os._exit(3)
        os.kill(os.getpid(), 9 if how == "kill" else 11)
    return {"value": 1.0}


@checker(observes=["value"])
def hang(pid_file):
    child = subprocess.Popen(["sleep", "300"])
    with open(pid_file, "w") as f:
        f.write(str(child.pid))
    time.sleep(300)
    return {"value": 1.0}
"""


def write_contract(root: Path, entries: list[dict[str, object]], cid: str = "crash-v1") -> Path:
    data = {
        "metadata": {
            "id": cid,
            "version": "1.0.0",
            "status": "DRAFT",
            "description": "crash safety",
            "changelog": [{"version": "1.0.0", "date": "2026-01-01", "change": "initial"}],
        },
        "falsification_tests": [
            {"rule": "r", "prediction": "p", "expect": "value == 1.0", "ship_blocking": True, **e} for e in entries
        ],
    }
    path = root / "contracts" / f"{cid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def proj(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        pv_contracts = "contracts"
        pv_checker_packages = "crashchecks"
        pythonpath = "."
        """
    )
    pkg = pytester.mkpydir("crashchecks")
    (pkg / "checks.py").write_text(CHECKERS)
    pytester.syspathinsert()
    return pytester


def nine(crash_at: int, how: str = "exit", **extra: object) -> list[dict[str, object]]:
    return [
        {
            "id": f"FALSIFY-CRASH-00{n}",
            "check": "crashchecks.checks:measure",
            "params": {"n": n, "crash_at": crash_at, "how": how},
            **extra,
        }
        for n in range(1, 10)
    ]


def verdicts(root: Path) -> dict[str, dict[str, object]]:
    [bundle] = find_bundles(root / "evidence")
    assert verify_bundle(bundle).ok, verify_bundle(bundle).problems
    data = json.loads((bundle / "bundle.json").read_text())
    return {f["id"]: f for f in data["falsifiers"]}


def test_a_checker_that_exits_in_a_process_isolated_run_is_one_error_among_nine(
    proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pv.requirements.cuda_present", lambda: False)  # a GPU machine keeps auto in threads
    write_contract(proj.path, nine(5))  # ship-blocking: forked by default (isolation auto)
    result = proj.runpytest("--pv-evidence", "-p", "no:cacheprovider")
    assert result.ret == 1
    found = verdicts(proj.path)
    assert [f["verdict"] for f in found.values()].count("survived") == 8
    crashed = found["FALSIFY-CRASH-005"]
    assert crashed["verdict"] == "error" and "exited with status 3" in crashed["message"]
    assert crashed["isolation"] == "process"
    assert not (proj.path / "evidence" / JOURNAL_DIR).exists()  # a finished session leaves no journal


def test_a_segfault_is_an_error_with_its_signal(proj: pytest.Pytester) -> None:
    path = write_contract(proj.path, nine(2, isolation="process")[:3])
    data = yaml.safe_load(path.read_text())
    for e in data["falsification_tests"]:
        e["params"]["how"] = "segv"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    proj.runpytest("--pv-evidence", "-p", "no:cacheprovider")
    found = verdicts(proj.path)
    assert "killed by SIGSEGV" in str(found["FALSIFY-CRASH-002"]["message"])
    assert found["FALSIFY-CRASH-003"]["verdict"] == "survived"


def test_a_session_that_dies_keeps_every_verdict_reached(proj: pytest.Pytester) -> None:
    write_contract(proj.path, nine(5, how="kill"))
    # in pytest's own process (isolation thread), a checker killed by a signal takes pytest down with it
    # (os._exit is refused there: tests/security/test_session_exit.py)
    result = proj.runpytest_subprocess("--pv-evidence", "--pv-isolation", "thread", "-p", "no:cacheprovider")
    assert result.ret != 0
    assert not find_bundles(proj.path / "evidence")
    [journal] = orphans(proj.path / "evidence")
    [outcome] = recover_all(proj.path / "evidence", proj.path, lambda: ENV)
    assert outcome.path is not None and not journal.exists()
    found = verdicts(proj.path)
    states = [found[f"FALSIFY-CRASH-00{n}"]["verdict"] for n in range(1, 10)]
    assert states == ["survived"] * 4 + ["error"] + ["not_run"] * 4
    assert "died while this falsifier ran" in str(found["FALSIFY-CRASH-005"]["message"])
    bundle = json.loads(next((proj.path / "evidence" / "crash-v1").glob("*/bundle.json")).read_text())
    assert bundle["recovered"] is True and bundle["interrupted"] is True


def test_the_next_evidence_session_recovers_a_dead_one(proj: pytest.Pytester) -> None:
    write_contract(proj.path, nine(5, how="kill"))
    proj.runpytest_subprocess("--pv-evidence", "--pv-isolation", "thread", "-p", "no:cacheprovider")
    write_contract(proj.path, nine(-1), cid="other-v1")
    result = proj.runpytest_subprocess("--pv-evidence", "contracts/other-v1.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "pv evidence: session * died before it finished, while running crash-v1::FALSIFY-CRASH-005",
            "pv evidence (recovered from a session that died): crash-v1 -> *",
        ]
    )
    assert {b.parent.name for b in find_bundles(proj.path / "evidence")} == {"crash-v1", "other-v1"}


def test_an_xdist_worker_that_dies_is_an_error_not_not_run(proj: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_contract(proj.path, nine(5, how="kill"))
    result = proj.runpytest_subprocess("--pv-evidence", "--pv-isolation", "thread", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == 1
    found = verdicts(proj.path)
    crashed = found["FALSIFY-CRASH-005"]
    assert crashed["verdict"] == "error" and "crashed" in str(crashed["message"])
    assert [f["verdict"] for f in found.values()].count("survived") == 8


def test_a_hung_checker_is_killed_with_its_children_at_the_deadline(proj: pytest.Pytester) -> None:
    pid_file = proj.path / "child.pid"
    write_contract(
        proj.path,
        [
            {
                "id": "FALSIFY-CRASH-001",
                "check": "crashchecks.checks:hang",
                "params": {"pid_file": str(pid_file)},
                "timeout_s": 1.5,
                "isolation": "process",
            }
        ],
    )
    start = time.perf_counter()
    proj.runpytest("--pv-evidence", "-p", "no:cacheprovider")
    assert time.perf_counter() - start < 60
    found = verdicts(proj.path)["FALSIFY-CRASH-001"]
    assert found["verdict"] == "error" and "process group was killed" in str(found["message"])
    assert found["timeout_s"] == 1.5
    child = int(pid_file.read_text())
    for _ in range(50):  # the kill is delivered at once; reaping by init can lag
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:
            if f.read().split()[2] == "Z":
                break
        time.sleep(0.1)
    else:
        pytest.fail(f"the checker's child {child} outlived the deadline")


def test_every_switch_that_changes_a_verdict_is_recorded(
    proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_contract(proj.path, nine(-1)[:2])
    monkeypatch.setattr("pv.requirements.cuda_present", lambda: False)  # a GPU machine keeps auto in threads
    monkeypatch.setenv("PV_FAULTS", "some_fault")
    result = proj.runpytest("--pv-evidence", "-k", "FALSIFY-CRASH-001", "--pv-timeout", "30", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*PV_FAULTS=some_fault switched faults on for this whole run*"])
    [bundle] = find_bundles(proj.path / "evidence")
    data = json.loads((bundle / "bundle.json").read_text())
    settings = data["settings"]
    assert settings["faults_env"] == ["some_fault"]
    assert settings["keyword"] == "FALSIFY-CRASH-001" and settings["timeout_s"] == 30.0
    assert settings["isolation"] == "auto" and "-k" in settings["args"]
    first = data["falsifiers"][0]
    assert first["timeout_s"] == 30.0 and first["isolation"] == "process" and isinstance(first["worker"], str)
