"""Atomic writes: a file or folder appears complete under its final name, or not at all.

Everything the engine writes to disk (checkpoints, exports, token shards, training state, the
tokenizer cache) goes through here, so a crash mid-write leaves the previous version intact and
never a half-written file under the real name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.faults import FAULTS


def current_umask() -> int:
    """The process umask, read without changing it where /proc says it (no race with other
    threads), else by the set-and-restore idiom."""
    try:
        if FAULTS.active("umask_read_by_setting"):  # pragma: no mutate
            raise OSError  # pragma: no mutate -- the defect: the set-and-restore idiom even where /proc says it
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _honour_umask(path: Path, directory: bool) -> None:
    # mkstemp/mkdtemp create 0600/0700 for their own safety; the finished file is an ordinary
    # output and gets the mode any other writer would give it (0644 under the usual umask 022)
    if FAULTS.active("atomic_private_mode"):
        return  # pragma: no mutate
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` to write; on success it is flushed to disk and renamed
    over ``path``, on any failure removed.  For writers that take a file name (safetensors, gguf)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        _honour_umask(tmp, directory=False)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) atomically."""
    with atomic_file(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``path`` to fill; on success it replaces ``path`` (an
    older folder of that name is removed first), on any failure it is removed.  Everything in it
    gets the umask's mode: some writers (safetensors' ``save_file``) create their file private."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield tmp
        for inner in tmp.rglob("*"):
            if not inner.is_symlink():
                _honour_umask(inner, directory=inner.is_dir())
        _honour_umask(tmp, directory=True)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, read in blocks (model files run to gigabytes)."""

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
