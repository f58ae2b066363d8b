"""What every bench script shares: a ``--smoke`` size, and the one figure line a reader or test looks for.

``--smoke`` runs the script at a size that takes seconds: CI runs every script that way
(tests/scripts/test_bench_smoke.py), so a script that no longer runs fails a test instead of
rotting; a smoke figure says the script works, not how fast anything is.  Every script ends with
one ``figure: <script>: <what it measured>`` line: at full size, the number to quote.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PREFIX = "figure:"


def add_smoke(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--smoke", action="store_true", help="a size that runs in seconds: checks the script works, measures little"
    )


def figure(text: str) -> None:
    """Print the script's figure line (``figure: validate_speed: ...``)."""
    print(f"{PREFIX} {Path(sys.argv[0]).stem}: {text}", flush=True)
