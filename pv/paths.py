"""How pv writes a path for people and for evidence: relative to a root, with forward slashes."""

from __future__ import annotations

import os
from pathlib import Path


def shown(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` (POSIX slashes), or absolute when it lies outside.

    Plain string work first (collection calls this for every item); symlinks are resolved only
    when the plain path is not under the root, so a symlinked tree keeps its own names.
    """
    plain, base = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    try:
        return plain.relative_to(base).as_posix()
    except ValueError:
        pass
    try:
        return plain.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return plain.as_posix()
