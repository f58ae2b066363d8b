"""A fresh working directory per artefact of a checker call.

A checker that writes several artefacts in one call (an init run and a scratch run, an HF and a
GGUF export) gives each its own folder under ``tmp_path``, so none can read another's files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def fresh_dir(base: Path, prefix: str = "run-") -> Path:
    """A new, empty directory under ``base`` that no earlier call returned."""
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
