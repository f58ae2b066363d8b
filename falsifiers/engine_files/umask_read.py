"""The umask the engine's writers honour is read, not set, and set back wherever it must be set.

POSIX has no call that reads the umask without setting it: the old idiom sets a mask and sets the
old one back, and between the two calls every file another thread creates gets the wrong mode.
``engine.atomic.current_umask`` reads the ``Umask:`` line of ``/proc/self/status`` where Linux
gives it, and falls back to the idiom only where there is no such line (a system without procfs).
Measured directly: ``os.umask`` is wrapped to record every call while the engine writes a file and
a folder, with ``/proc/self/status`` readable and with it unreadable (``Path.read_text`` refusing
that one path, as on a system without procfs).  The modes are read with ``os.stat`` and the
umask after the writes with ``os.umask`` itself, outside the recording.  The claim is judged
where ``/proc/self/status`` has a ``Umask:`` line (Linux since 4.7) and skipped elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.atomic import atomic_dir, current_umask, write_atomic
from falsifiers.engine_files.files import _umask
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.outcomes import skip

STATUS = "/proc/self/status"
MASKS = (0o027, 0o002)


@contextlib.contextmanager
def _recorded(calls: list[int]) -> Iterator[None]:
    """Every ``os.umask`` call made inside, by its argument."""
    real = os.umask

    def umask(mask: int) -> int:
        calls.append(mask)
        return real(mask)

    os.umask = umask
    try:
        yield
    finally:
        os.umask = real


@contextlib.contextmanager
def _without_status() -> Iterator[None]:
    """``/proc/self/status`` cannot be read (no procfs); every other path reads as before."""
    real = pathlib.Path.read_text

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if str(self) == STATUS:
            raise FileNotFoundError(2, "No such file or directory", STATUS)
        return real(self, *args, **kwargs)

    pathlib.Path.read_text = read_text  # type: ignore[method-assign]
    try:
        yield
    finally:
        pathlib.Path.read_text = real  # type: ignore[method-assign]


def _write(work: Path) -> list[Path]:
    """A file with write_atomic, and a folder with atomic_dir holding a file and a folder."""

    write_atomic(work / "file.txt", "text")
    with atomic_dir(work / "folder") as tmp:
        (tmp / "inner.txt").write_text("inner", encoding="utf-8")
        (tmp / "sub").mkdir()
    return [work / "file.txt", work / "folder", work / "folder" / "inner.txt", work / "folder" / "sub"]


def _status_lines() -> list[str]:
    try:
        return Path(STATUS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


@checker(
    observes=["calls_with_status", "read_differing", "modes_differing", "umask_after_differing"],
    ids=["FALSIFY-IO-022"],
)
def umask_read_not_set(tmp_path: Path) -> dict[str, Any]:
    """Under umasks 027 and 002: current_umask() and the writes of ``_write``, with
    ``/proc/self/status`` readable (the ``os.umask`` calls they make, none expected) and without
    it; the value current_umask returns, each mode by os.stat against 0666 or 0777 less the umask,
    and the umask after each set of writes, as they differ from what was set."""

    if not any(line.startswith("Umask:") for line in _status_lines()):
        skip(f"the umask is read from {STATUS}, which has no Umask: line on this system")
    work = fresh_dir(tmp_path, "umask-")
    calls_with_status: list[str] = []
    read_differing: list[str] = []
    modes_differing: list[str] = []
    umask_after_differing: list[str] = []
    for mask in MASKS:
        for status in (True, False):
            where = f"umask {mask:03o}, {STATUS} {'readable' if status else 'unreadable'}"
            folder = work / f"{mask:03o}-{'status' if status else 'none'}"
            folder.mkdir()
            calls: list[int] = []
            with _umask(mask):
                with contextlib.ExitStack() as stack:
                    if not status:
                        stack.enter_context(_without_status())
                    stack.enter_context(_recorded(calls))
                    read = current_umask()
                    written = _write(folder)
                after = os.umask(mask)
            if status and calls:
                calls_with_status.append(f"{where}: os.umask called with {', '.join(f'{c:03o}' for c in calls)}")
            if read != mask:
                read_differing.append(f"{where}: current_umask() gave {read:03o}")
            if after != mask:
                umask_after_differing.append(f"{where}: the umask is {after:03o} after the writes")
            for path in written:
                mode = os.stat(path).st_mode & 0o777
                want = (0o777 if path.is_dir() else 0o666) & ~mask
                if mode != want:
                    modes_differing.append(f"{where}: {path.relative_to(folder)} is {mode:03o}, not {want:03o}")
    return {
        "calls_with_status": calls_with_status,
        "read_differing": read_differing,
        "modes_differing": modes_differing,
        "umask_after_differing": umask_after_differing,
    }
