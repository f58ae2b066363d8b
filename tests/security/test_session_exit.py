"""A checker cannot end the session quietly: ``os._exit(0)`` under thread isolation used to leave
pytest's exit status 0 and no bundle (CI green).  It is now an error verdict, the session goes on,
writes its evidence and exits non-zero; a session killed outright is named at the next run and by
``pv evidence recover``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.pv.toy import build_toy, falsifier

EXITING = """
import os
import time

import pv


@pv.checker(observes=["value"], ids=["FALSIFY-EXIT-001"])
def leave(code: int = 0):
    os._exit(code)


@pv.checker(observes=["value"], ids=["FALSIFY-EXIT-002"])
def fine():
    return {"value": 1.0}


@pv.checker(observes=["value"], ids=["FALSIFY-EXIT-003"])
def hang():
    time.sleep(600)
    return {"value": 1.0}
"""


@pytest.mark.parametrize("timeout", [30, 0], ids=["in-a-thread", "in-the-calling-thread"])
def test_os_exit_in_a_checker_is_an_error_not_the_end_of_the_session(pytester: pytest.Pytester, timeout: int) -> None:
    toy = build_toy(pytester, addopts=f"--pv-isolation=thread --pv-timeout={timeout}", checkers={"exiting": EXITING})
    toy.contract(
        "exit",
        [
            falsifier("FALSIFY-EXIT-001", check="toyfalsifiers.exiting:leave", expect="value == 1.0"),
            falsifier("FALSIFY-EXIT-002", check="toyfalsifiers.exiting:fine", expect="value == 1.0"),
        ],
    )
    result = pytester.runpytest_subprocess("--pv-evidence")
    assert result.ret != 0
    out = result.stdout.str()
    assert "os._exit(0)" in out and "isolation: process" in out
    assert toy.verdicts() == {"exit::FALSIFY-EXIT-001": "error", "exit::FALSIFY-EXIT-002": "survived"}
    assert list((pytester.path / "evidence" / "exit").iterdir())  # the bundle was written


def test_a_killed_session_is_named_by_recover(pytester: pytest.Pytester) -> None:
    toy = build_toy(pytester, addopts="--pv-isolation=thread --pv-timeout=600", checkers={"exiting": EXITING})
    toy.contract(
        "exit",
        [
            falsifier("FALSIFY-EXIT-002", check="toyfalsifiers.exiting:fine", expect="value == 1.0"),
            falsifier("FALSIFY-EXIT-003", check="toyfalsifiers.exiting:hang", expect="value == 1.0"),
        ],
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--pv-evidence", "-p", "no:cacheprovider"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    journal = pytester.path / "evidence" / ".journal"
    deadline = time.monotonic() + 60

    def hanging() -> bool:  # the journal says the hanging falsifier has started
        for path in journal.glob("*.jsonl") if journal.is_dir() else ():
            for line in path.read_text().splitlines():
                rec = json.loads(line) if line.strip().endswith("}") else {}
                if rec.get("kind") == "start" and rec.get("falsify_id") == "FALSIFY-EXIT-003":
                    return True
        return False

    while time.monotonic() < deadline and not hanging():
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() != 0  # a kill is never a green exit
    recovered = subprocess.run(
        [sys.executable, "-c", "from pv.cli import main; main()", "evidence", "recover"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    assert recovered.returncode == 0, recovered.stderr
    assert "died before it finished" in recovered.stdout
    assert "FALSIFY-EXIT-003" in recovered.stdout  # the falsifier it was running
    assert "1 bundle(s) recovered" in recovered.stdout
