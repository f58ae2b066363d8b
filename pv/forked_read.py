"""Many contract files read at once, a share of them in each forked worker process.

Reading a contract is mostly YAML (libyaml's parse, then pv's YAML 1.2 conversion), which holds
the GIL, so threads do not help: on a cold ``pv lint`` or ``pv validate`` of 1,000 contracts it
is half the run.  A worker forked after the imports reads its share into plain data, which comes
back pickled through a pipe; the pydantic model is rebuilt here from data the worker already
validated.  A file the worker had anything to say about (a diagnostic, a skip) is read again
here, and so is every file of a worker that failed: the result is the sequential reading's, file
for file, whatever the workers did.

Workers are used only where forking is safe and pays: on Linux, from a process with one thread,
for at least :data:`MIN_FILES` files; ``PV_READ_WORKERS`` sets how many processes read (``1``:
this one alone).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from pv.config import ConfigError
from pv.loader import LoadedContract, load_contract_file
from pv.model import Contract

WORKERS_ENV = "PV_READ_WORKERS"
MIN_FILES = 200  # below this a fork and its pipe cost more than the reading they share
MAX_WORKERS = 8


def workers(n_files: int) -> int:
    """How many processes read ``n_files`` files (this one included).  Raises
    :class:`pv.config.ConfigError` for a ``PV_READ_WORKERS`` that is not a whole number of 1 or more."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured:
        try:
            wanted = int(configured)
        except ValueError:
            raise ConfigError(f"{WORKERS_ENV}={configured!r} is not a whole number; set it to 1 or more") from None
        if wanted < 1:
            raise ConfigError(f"{WORKERS_ENV}={configured!r}: at least one process reads; set it to 1 or more")
    else:
        if n_files < MIN_FILES:
            return 1
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        wanted = min(cpus, MAX_WORKERS, n_files // (MIN_FILES // 2))
    if wanted < 2 or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1  # a fork copies one thread only: with others running, it could copy a held lock
    return min(wanted, n_files)


def read_files(paths: Sequence[Path], dialect: str = "pv") -> list[LoadedContract]:
    """Each of ``paths`` through :func:`pv.loader.load_contract_file`, in order."""
    n = workers(len(paths))
    if n < 2:
        return [load_contract_file(p, dialect=dialect) for p in paths]
    shares = [range(i, len(paths), n) for i in range(n)]  # interleaved: shares of like sizes
    out: list[LoadedContract | None] = [None] * len(paths)
    pending: dict[int, tuple[range, int]] = {}  # a worker's pid -> its share and the pipe it sends on
    try:
        for share in shares[1:]:
            pid, fd = _fork(paths, share, dialect)
            pending[pid] = (share, fd)
        for i in shares[0]:
            out[i] = load_contract_file(paths[i], dialect=dialect)
        for pid in list(pending):
            share, fd = pending.pop(pid)
            got = _collect(pid, fd, len(share))
            for k, i in enumerate(share):
                out[i] = _restored(got[k] if got is not None else None) or load_contract_file(paths[i], dialect=dialect)
    finally:
        for pid, (_, fd) in pending.items():  # left by an interruption: stop them and reap them
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    return [loaded for loaded in out if loaded is not None]


def _fork(paths: Sequence[Path], share: range, dialect: str) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: read, send, and leave without running anything of the parent's
        code = 1
        try:
            os.close(read_end)
            payload = pickle.dumps(
                [_portable(load_contract_file(paths[i], dialect=dialect)) for i in share],
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, fd: int, expected: int) -> list[LoadedContract | None] | None:
    """A worker's readings, or None when it failed in any way (its share is then read here)."""
    try:
        with os.fdopen(fd, "rb") as pipe:
            payload = pipe.read()
    finally:
        _, status = os.waitpid(pid, 0)  # a worker whose pipe closed early ends on its next write
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    try:
        got = pickle.loads(payload)
    except Exception:  # a torn payload: whatever pickle raises, the share is read here instead
        return None
    return got if isinstance(got, list) and len(got) == expected else None


def _portable(loaded: LoadedContract) -> LoadedContract | None:
    """What a worker sends back: a clean reading without its model (rebuilt on arrival), or None
    for a file with anything to report, which is read again where its positions can be found."""
    if loaded.diagnostics or loaded.skipped or loaded.contract is None or loaded.sha256 is None:
        return None
    loaded.contract = None
    loaded._root = None
    return loaded


def _restored(loaded: LoadedContract | None) -> LoadedContract | None:
    if loaded is None or loaded.data is None:
        return None
    try:
        loaded.contract = Contract.model_validate(loaded.data)
    except ValidationError:
        return None  # not what the worker found: read it here
    return loaded
