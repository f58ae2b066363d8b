"""Makes the repository's own packages (``engine``, ``falsifiers``) importable from a bench script.

The wheel ships only ``pv``; the engine and its checkers are this repository's system under test
and import from its root, which ``python bench/x.py`` does not put on ``sys.path`` by itself.
Importing this module first (``import _repo  # noqa: F401``) does.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
