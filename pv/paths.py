"""How pv writes a path for people and for evidence: relative to a root, with forward slashes."""

from __future__ import annotations

import os
from pathlib import Path


def shown(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` (POSIX slashes; ``.`` for the root itself), or absolute when
    it lies outside.

    Plain string work first (lint and collection call this for every file, and resolving each path
    through the file system costs more than the rest of a cached lint run); symlinks are resolved
    only when the plain path is not under the root, so a symlinked tree keeps its own names.
    """
    text = os.path.abspath(path)
    base = os.path.abspath(root)
    inside = _under(text, base)
    if inside is None:
        text = os.path.realpath(text)
        inside = _under(text, os.path.realpath(base))
    return inside if inside is not None else Path(text).as_posix()


def _under(path: str, root: str) -> str | None:
    if path == root:
        return "."
    prefix = root if root.endswith(os.sep) else root + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :].replace(os.sep, "/")
    return None
