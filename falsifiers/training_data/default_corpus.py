"""The engine's default corpus is the slice of the standard library its docs describe.

engine/corpus.py documents it: the top-level ``*.py`` files of the standard library (no
sub-packages), sorted by file name, taken whole in that order until ``max_bytes`` (1,000,000 by
default) is reached, the last file cut at the cap.  The reference here lists that directory with
``os.scandir`` and applies the rule; the engine's slice is compared with it file for file, at caps
that land inside the first file, exactly on a file's end and one byte past it, and at the default.
Its refusals are read word for word, the one for a library without sources on a stand-in folder.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path
from typing import Any
from unittest import mock

from engine.corpus import default_corpus_files
from pv.checkers import checker

DOCUMENTED_MAX_BYTES = 1_000_000


def _sizes() -> list[tuple[str, int]]:
    """(name, size) of the standard library's top-level .py files, by name."""
    root = sysconfig.get_paths()["stdlib"]
    return sorted((e.name, e.stat().st_size) for e in os.scandir(root) if e.name.endswith(".py") and e.is_file())


def _reference(max_bytes: int) -> list[list[Any]]:
    """[name, bytes read or "whole"] per file, as the docs describe the slice."""
    out: list[list[Any]] = []
    total = 0
    for name, size in _sizes():
        if total + size >= max_bytes:
            out.append([name, max_bytes - total])
            break
        out.append([name, "whole"])
        total += size
    return out


@checker(observes=["caps", "slices_differing", "default_bytes", "refusals_differing"], ids=["FALSIFY-DATA-011"])
def default_corpus_as_documented(tmp_path: Path) -> dict[str, Any]:
    """default_corpus_files at 1 byte, at the first file's size, one byte past it, at the first two
    files' sizes and at the default; refusing 0, -5 and a library without top-level sources."""

    (_, first), (_, second) = _sizes()[:2]
    caps = [1, first, first + 1, first + second, None]
    differing: list[list[Any]] = []
    default_bytes = -1
    for cap in caps:
        chosen = default_corpus_files() if cap is None else default_corpus_files(cap)
        got = [[f.path.name, "whole" if f.limit is None else f.limit] for f in chosen]
        want = _reference(DOCUMENTED_MAX_BYTES if cap is None else cap)
        same_folder = all(f.path.parent == Path(sysconfig.get_paths()["stdlib"]) for f in chosen)
        if got != want or not same_folder:
            differing.append(["default" if cap is None else cap, got[:4], want[:4], same_folder])
        if cap is None:
            default_bytes = sum(len(f.path.read_bytes()[: f.limit]) for f in chosen)

    no_sources = tmp_path / "lib"
    (no_sources / "pkg.py").mkdir(parents=True)  # a folder named like a module is not a source file
    (no_sources / "pkg.py" / "inner.py").write_text("x = 1\n")
    (no_sources / "README.txt").write_text("not python\n")
    refusals = {
        "0": (ValueError, "max_bytes must be positive, got 0"),
        "-5": (ValueError, "max_bytes must be positive, got -5"),
        "no sources": (FileNotFoundError, f"no Python source files found in the standard library at {no_sources}"),
    }
    refused: list[list[Any]] = []
    for name, (kind, message) in refusals.items():
        said: Any = "no refusal"
        try:
            if name == "no sources":
                with mock.patch("engine.corpus.stdlib_dir", lambda: no_sources):
                    default_corpus_files()
            else:
                default_corpus_files(int(name))
        except kind as exc:
            said = str(exc)
        if said != message:
            refused.append([name, said])
    return {
        "caps": len(caps),
        "slices_differing": differing,
        "default_bytes": default_bytes,
        "refusals_differing": refused,
    }
