"""The engine's built-in text corpus: a fixed slice of the Python standard library's own source.

Every machine that runs the engine already has it, so nothing is downloaded.  The slice is the
top-level ``*.py`` files of ``sysconfig.get_paths()["stdlib"]`` (no sub-packages, no
``site-packages``), sorted by file name, taken in that order until ``max_bytes`` is reached (the
last file is cut at the cap).  The same interpreter always yields the same slice; a different
Python version yields a different one, which :func:`corpus_digest` tells apart.
"""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.faults import FAULTS

DEFAULT_MAX_BYTES = 1_000_000  # enough text for a few-thousand-token BPE, trains in seconds


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    limit: int | None = None  # bytes to read from the start; None = the whole file

    def read_text(self) -> str:
        data = self.path.read_bytes()
        if self.limit is not None:
            data = data[: self.limit]
        # A cut can land inside a multi-byte character; replacement keeps the text deterministic.
        return data.decode("utf-8", errors="replace")


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def default_corpus_files(max_bytes: int = DEFAULT_MAX_BYTES) -> list[CorpusFile]:
    """The documented stdlib slice: sorted top-level ``*.py`` files, capped at ``max_bytes``."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    root = stdlib_dir()
    files = sorted((p for p in root.glob("*.py") if p.is_file()), key=lambda p: p.name)
    if not files:
        raise FileNotFoundError(f"no Python source files found in the standard library at {root}")
    chosen: list[CorpusFile] = []
    total = 0
    for path in files:
        size = path.stat().st_size
        if total + size >= max_bytes:
            chosen.append(CorpusFile(path, max_bytes - total))
            if FAULTS.active("default_corpus_last_file_uncut"):  # pragma: no mutate
                chosen[-1] = CorpusFile(path)  # pragma: no mutate -- the defect: the cap overrun by the last file
            break
        chosen.append(CorpusFile(path))
        total += size
    return chosen


def as_corpus_files(files: Iterable[str | Path | CorpusFile]) -> list[CorpusFile]:
    return [f if isinstance(f, CorpusFile) else CorpusFile(Path(f)) for f in files]


def read_corpus(files: Sequence[CorpusFile]) -> list[str]:
    return [f.read_text() for f in files]


def corpus_digest(texts: Sequence[str]) -> str:
    """sha256 over the texts' content and boundaries (not their paths, so a moved copy matches):
    for each text, its UTF-8 byte count as 8 little-endian bytes, then those bytes."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()
