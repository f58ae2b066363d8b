"""Loaded by every Python process a mutation run starts (``scripts/mutation/run.py`` puts this folder
first on ``PYTHONPATH``): a falsifier that runs the engine in a child process (``python -m engine``,
a measuring child, torchrun ranks) calls engine functions mutmut's stats cannot see from the test
process.  During mutmut's stats run (``MUTANT_UNDER_TEST=stats``) the child writes the functions it
called to ``$PV_MUTMUT_CHILD_HITS/<pid>.hits`` when it exits; the pv plugin adds them to the
running test's (``pv.mutation_hooks``), so mutmut runs that falsifier for their mutants.
"""

from __future__ import annotations

import atexit
import os


def _write_hits() -> None:
    try:
        # loaded by every process of a mutation run: pv (and mutmut) may not be importable in all of them
        from pv.mutation import record_child_hits
    except ImportError:
        return
    record_child_hits()


if os.environ.get("PV_MUTMUT_CHILD_HITS") and os.environ.get("MUTANT_UNDER_TEST") == "stats":
    atexit.register(_write_hits)
