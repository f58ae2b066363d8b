"""mutmut for a number of minutes, then stopped as Ctrl-C would stop it: what finished is kept."""

from __future__ import annotations

import os
import signal
import subprocess


def run(
    argv: list[str], minutes: float, env: dict[str, str], cwd: str | os.PathLike[str] | None = None
) -> tuple[int, bool]:
    """``argv`` until it ends or ``minutes`` pass (0: no limit); Ctrl-C here stops it the same way.
    Returns its exit code and whether it was stopped.

    It runs in its own process group with Ctrl-C restored (a shell starts background jobs with
    SIGINT ignored, and the child would inherit that), so stopping it reaches its workers too."""
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        return proc.wait(timeout=minutes * 60 if minutes > 0 else None), False
    except subprocess.TimeoutExpired:
        print(f"\n{minutes:g} minutes up: stopping mutmut (finished verdicts are kept)", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping mutmut (finished verdicts are kept)", flush=True)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=120), True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(), True


def run_for(argv: list[str], minutes: float, env: dict[str, str], cwd: str | os.PathLike[str] | None = None) -> int:
    """:func:`run`'s exit code alone."""
    return run(argv, minutes, env, cwd)[0]
