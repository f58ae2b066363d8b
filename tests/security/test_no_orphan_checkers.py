"""No checker process outlives pytest: a checker forked for process isolation, and whatever it
started, end with the call and with pytest itself, even when pytest is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pv.toy import build_toy, falsifier

SPAWNING = """
import os
import subprocess
import sys
import time

import pv


@pv.checker(observes=["value"], ids=["FALSIFY-ORPHAN-001"])
def spawn_and_hang(out: str = "pids.txt", hang: float = 600.0):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(out, "w") as f:
        f.write(f"{os.getpid()} {child.pid}\\n")
    time.sleep(hang)
    return {"value": 1.0}
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for init to reap it is gone for our purpose
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _project(pytester: pytest.Pytester, hang: float) -> Path:
    """A toy project whose one falsifier starts a child, writes both pids to the file returned, and
    sleeps ``hang`` seconds; checkers run in forked processes."""
    toy = build_toy(pytester, addopts="--pv-isolation=process --pv-timeout=600", checkers={"spawning": SPAWNING})
    out = pytester.path / "pids.txt"
    toy.contract(
        "orphan",
        [
            falsifier(
                "FALSIFY-ORPHAN-001",
                check="toyfalsifiers.spawning:spawn_and_hang",
                params={"out": str(out), "hang": hang},
                expect="value == 1.0",
            )
        ],
    )
    return out


def _pids(path: Path, proc: subprocess.Popen[bytes]) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.is_file() and path.read_text().endswith("\n")):
        assert proc.poll() is None, "pytest ended before the checker started"
        time.sleep(0.1)
    return [int(x) for x in path.read_text().split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc as on Linux")
def test_kill_9_of_pytest_ends_the_checker_and_its_children(pytester: pytest.Pytester) -> None:
    out = _project(pytester, hang=600.0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pids = _pids(out, proc)
    assert all(_alive(p) for p in pids)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_gone(pids) == [], "a checker process outlived pytest"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc as on Linux")
def test_a_checker_s_children_end_with_its_call(pytester: pytest.Pytester) -> None:
    out = _project(pytester, hang=0.0)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert _wait_gone([int(x) for x in out.read_text().split()]) == []
