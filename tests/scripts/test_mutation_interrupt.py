"""scripts/mutation/run.py stops on Ctrl-C or `kill`, and only its own process turns that into an interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]

# Run in a child interpreter: loading scripts/mutation/run.py puts mutmut's site folder on sys.path and
# the test installs signal handlers, neither of which should outlive it.
PROBE = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("mutation", "scripts/mutation/run.py")
mutation = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutation)
mutation.install_interrupt()
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(0)  # reached only if the forked process outlived its SIGTERM
_, status = os.waitpid(pid, 0)
print("worker", os.WTERMSIG(status) if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
for signum in (signal.SIGTERM, signal.SIGINT):
    try:
        os.kill(os.getpid(), signum)
    except KeyboardInterrupt:
        print("main interrupted")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="mutmut forks its workers; this platform has no fork")
def test_a_forked_worker_ends_by_the_signal_and_the_main_process_is_interrupted() -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert run.stdout.split("\n")[:3] == [f"worker {int(signal.SIGTERM)}", "main interrupted", "main interrupted"]


def test_a_chunk_past_its_minutes_is_stopped_as_ctrl_c_would_and_its_code_returned(tmp_path: Path) -> None:
    stopping = load_script("scripts/mutation/stopping.py")
    marker = tmp_path / "stopped"
    child = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGINT, lambda *a: (open({str(marker)!r}, 'w').close(), sys.exit(7)))\n"
        "time.sleep(60)\n"
    )
    code, stopped = stopping.run([sys.executable, "-c", child], 0.02, dict(os.environ))
    assert (code, stopped) == (7, True) and marker.exists()  # it got SIGINT (its handler ran), not SIGKILL
    assert stopping.run([sys.executable, "-c", "raise SystemExit(3)"], 0, dict(os.environ)) == (3, False)
    assert stopping.run_for([sys.executable, "-c", "raise SystemExit(3)"], 0, dict(os.environ)) == 3
