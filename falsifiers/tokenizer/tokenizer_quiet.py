"""Training a tokenizer writes nothing to the process's output.

A command that trains the engine's tokenizer on the way (``pretrain`` on a machine whose cache is
empty) prints its JSON on stdout, and whatever else lands there corrupts what a caller parses.
The ``tokenizers`` library's trainer writes its progress straight to file descriptor 1 from Rust,
past Python's ``sys.stdout`` and past typer's test runner: blank lines even when stdout is not a
terminal.  Here file descriptors 1 and 2 are pointed at files while the engine trains, from
texts, from files and through an empty cache, and both files must stay empty.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.tokenizer import CACHE_ENV, cached_tokenizer, train_tokenizer, train_tokenizer_from_texts
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEXTS = ("def add(a, b):\n    return a + b\n", "The quick brown fox jumps over the lazy dog.") * 8
VOCAB = 300


@contextmanager
def descriptors_to(folder: Path) -> Iterator[dict[str, Path]]:
    """File descriptors 1 and 2 written to ``folder/stdout`` and ``folder/stderr`` for the block."""
    paths = {"stdout": folder / "stdout", "stderr": folder / "stderr"}
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    try:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            with open(paths[name], "wb") as f:
                os.dup2(f.fileno(), fd)
        yield paths
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


@checker(
    observes=["trainings", "bytes_written", "bytes_written_total", "cached_equals_trained"], ids=["FALSIFY-TOK-006"]
)
def training_writes_nothing(tmp_path: Path) -> dict[str, Any]:
    """train_tokenizer_from_texts, train_tokenizer on a file, and cached_tokenizer on an empty
    cache (PV_ENGINE_CACHE pointed at a new folder), each with stdout and stderr at file level
    sent to files."""

    work = fresh_dir(tmp_path, "quiet-")
    corpus = work / "corpus.py"
    corpus.write_text("".join(TEXTS), encoding="utf-8")
    calls: dict[str, Callable[[], Any]] = {
        "texts": lambda: train_tokenizer_from_texts(list(TEXTS), VOCAB),
        "files": lambda: train_tokenizer(VOCAB, [corpus]),
        "cache": lambda: cached_tokenizer(VOCAB, [corpus]),
    }
    written: dict[str, int] = {}
    made: dict[str, Any] = {}
    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(work / "empty-cache")
    try:
        for name, call in calls.items():
            folder = fresh_dir(work, f"{name}-")
            with descriptors_to(folder) as paths:
                made[name] = call()
            written[name] = sum(p.stat().st_size for p in paths.values())
    finally:
        if previous is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = previous
    return {
        "trainings": len(calls),
        "bytes_written": [written[name] for name in calls],  # texts, files, cache
        "bytes_written_total": sum(written.values()),
        "cached_equals_trained": made["cache"].to_json() == made["files"].to_json(),
    }
