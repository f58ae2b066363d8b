"""What every bench script shares: a ``--smoke`` size, best-of timing and the one figure line to quote.

``--smoke`` runs the script at a size that takes seconds: CI runs every script that way
(tests/scripts/test_bench_smoke.py), so a script that no longer runs fails a test instead of
rotting; a smoke figure says the script works, not how fast anything is.  Every script ends with
one ``figure: <script>: <what it measured>`` line: at full size, the number to quote.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

PREFIX = "figure:"


def add_smoke(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--smoke", action="store_true", help="a size that runs in seconds: checks the script works, measures little"
    )


def figure(text: str) -> None:
    """Print the script's figure line (``figure: validate_speed: ...``)."""
    print(f"{PREFIX} {Path(sys.argv[0]).stem}: {text}", flush=True)


def best_of(runs: Mapping[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` wall seconds per run after one warm-up call each, alternating the runs
    so background load hits all of them alike."""
    for fn in runs.values():
        fn()
    best: dict[str, float] = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    return best
