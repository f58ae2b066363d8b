"""Artefacts built once per machine, not once per process: a content-addressed cache with a file lock.

A pytest session with xdist workers, or several sessions one after another, would otherwise each
pretrain the same init.  :func:`built_once` keys an artefact by everything that makes it (the
caller's settings, the engine's own source code and any faults switched on by the environment),
lets the first process build it under a file lock while the others wait, and hands every process
the same folder afterwards.  A build that fails or is killed leaves nothing behind: the folder
appears, with its ``DONE`` marker, only when the build finished.

The cache lives in ``$PV_ENGINE_CACHE`` (default ``~/.cache/pv-engine``), beside the tokenizers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from filelock import FileLock

from engine.faults import FAULTS
from engine.tokenizer import cache_dir
from pv.faults import ENV_VAR as FAULTS_ENV_VAR

DONE = "DONE"
ENGINE_ROOT = Path(__file__).resolve().parent


@cache
def engine_source_digest() -> str:
    """sha256 over every engine source file (path and bytes): any change to the engine rebuilds."""
    h = hashlib.sha256()
    for path in sorted(ENGINE_ROOT.rglob("*.py")):
        h.update(path.relative_to(ENGINE_ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def artefact_key(key: Mapping[str, Any]) -> str:
    """The digest an artefact is stored under: the caller's ``key``, the engine's source, the faults."""
    faults = os.environ.get(FAULTS_ENV_VAR)
    engine = engine_source_digest()
    if FAULTS.active("build_cache_ignores_engine_source"):  # the defect: an engine change reuses old artefacts
        engine = ""  # pragma: no mutate
    ordered = True
    if FAULTS.active("build_cache_key_order_matters"):  # the defect: one key in another order builds again
        ordered = False  # pragma: no mutate
    # a list, not named fields: the digest separates the three parts by position
    blob = json.dumps([key, engine, faults], sort_keys=ordered, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def built_once(kind: str, key: Mapping[str, Any], build: Callable[[Path], None], *, root: Path | None = None) -> Path:
    """The folder of the artefact ``key`` describes, calling ``build(folder)`` only if no process has yet.

    ``build`` writes into the empty folder it is given; the folder is renamed into place when it
    returns, so a reader never sees half an artefact."""
    base = (root or cache_dir()) / kind
    final = base / artefact_key(key)
    if (final / DONE).is_file():
        return final
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / DONE).is_file():  # another process built it while this one waited
            return final
        work = base / f".{final.name}.{os.getpid()}.partial"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            build(work)
            (work / DONE).write_bytes((json.dumps(dict(key), sort_keys=True, default=str) + "\n").encode())
            shutil.rmtree(final, ignore_errors=True)  # an unfinished folder of an older layout
            os.replace(work, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final
