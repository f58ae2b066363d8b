"""What does running a checker in a forked process cost, against a thread of pytest?

Two measurements, each printed as a ratio against its peer measured in the same run:

1. the harness alone: ``call_in_process`` vs ``call_with_timeout`` on a trivial checker, in a
   process that has torch loaded (as the engine's checkers have), N calls each;
2. with ``--suite``: the engine's ship-blocking falsifiers with their mutants, ``--pv-isolation
   thread`` vs ``--pv-isolation process`` (about a minute each on the 2-core reference machine).

    python bench/isolation_overhead.py
    python bench/isolation_overhead.py --suite
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from _figure import add_smoke, figure

from pv.run_checker import call_in_process, call_with_timeout

ROOT = Path(__file__).resolve().parent.parent


def checker(n: int) -> dict[str, float]:
    return {"value": float(torch.ones(n).sum())}


def per_call(call: object, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        outcome = call(checker, {"n": 64}, 60.0)  # type: ignore[operator]
        assert outcome.value == {"value": 64.0}, outcome
    return (time.perf_counter() - start) / n


def suite(isolation: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "contracts", "-m", "ship_blocking", "--pv-mutants", "-q", "-p",
         "no:cacheprovider", "--pv-isolation", isolation],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="calls per variant")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--suite", action="store_true", help="also time the ship-blocking suite both ways")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat, args.suite = 3, 1, False
    torch.ones(1).sum()  # torch's thread pool in use, as after any engine checker
    thread = min(per_call(call_with_timeout, args.n) for _ in range(args.repeat))
    process = min(per_call(call_in_process, args.n) for _ in range(args.repeat))
    print(f"per call: thread {thread * 1e3:.2f} ms, process {process * 1e3:.2f} ms "
          f"(+{(process - thread) * 1e3:.1f} ms, ratio {process / thread:.1f}x)")  # fmt: skip
    figure(f"a forked checker costs {(process - thread) * 1e3:.1f} ms more per call ({process / thread:.1f}x)")
    if args.suite:
        t = statistics.median(suite("thread") for _ in range(1))
        p = statistics.median(suite("process") for _ in range(1))
        print(f"ship-blocking suite with mutants: thread {t:.1f} s, process {p:.1f} s, ratio {p / t:.2f}x")


if __name__ == "__main__":
    main()
