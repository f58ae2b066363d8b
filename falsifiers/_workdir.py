"""A fresh working directory per checker call.

pytest's ``tmp_path`` is the same directory for a falsifier's run and its mutant re-run, so a
checker that writes files there would see the first run's leftovers; each call takes its own.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def fresh_dir(base: Path, prefix: str = "run-") -> Path:
    """A new, empty directory under ``base`` that no earlier call returned."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
