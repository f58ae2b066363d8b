"""What a training command prints when it cannot go on, word for word.

A run that stops on bad input or on the file system prints one line, ``error: `` and the cause, and
exits 2.  For an operating-system failure the cause is the path and the system's reason (or the
reason alone when the failing write names no file: a full disk), not Python's rendering of the
exception; for ``finetune --adapters`` it is the request's own fault, with the names it lists
separated as a sentence separates them.  The expected lines are written out here from
``os.strerror`` and the engine's own tables; rich may wrap a long line, so the output's whitespace
is joined before comparing.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from engine.config import PRESETS
from engine.multi_adapter import SCHEDULES
from falsifiers.shared.refusals import command_refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.outcomes import skip

FULL_DEVICE = Path("/dev/full")  # every write to it fails with ENOSPC: a disk that is full


@checker(observes=["requests", "requests_differing", "differing"], ids=["FALSIFY-TCLI-010"])
def training_errors_word_for_word(tmp_path: Path) -> dict[str, Any]:
    """pretrain into a folder below a file (a path relative to the working folder, as typed) and
    into a folder whose log is on a full device;
    finetune --adapters with an unknown schedule and with two OUT folders of one name."""

    if not FULL_DEVICE.exists():
        skip(f"no {FULL_DEVICE} on this system: the full-disk request needs it")
    work = fresh_dir(tmp_path, "train-errors-")
    # relative, as typed, and starting with a letter the reason's separator is not made of
    a_file = Path("X-notes")
    (work / a_file).write_text("not a folder\n", encoding="utf-8")
    full = work / "full"
    full.mkdir()
    (full / "log.jsonl").symlink_to(FULL_DEVICE)
    base = work / "base.safetensors"  # never read: each request is refused before loading it
    data = work / "data.jsonl"
    requests: list[tuple[tuple[Any, ...], str]] = [
        (("pretrain", a_file / "out", "--steps", 1), f"{a_file / 'out'}: {os.strerror(errno.ENOTDIR)}"),
        (("pretrain", full, "--steps", 1), os.strerror(errno.ENOSPC)),
        (
            ("pretrain", work / "p", "--preset", "nope", "--steps", 1),
            f"unknown preset 'nope'; known: {', '.join(PRESETS)}",
        ),
        (
            ("finetune", base, "--adapters", f"{data}:{work / 'a'}", "--schedule", "sideways"),
            f"unknown schedule 'sideways'; expected one of {', '.join(SCHEDULES)}",
        ),
        (
            ("finetune", base, "--adapters", f"{data}:{work / 'x' / 'a'}", "--adapters", f"{data}:{work / 'a'}"),
            "--adapters: two OUT folders share a name (a, a); each names its adapter",
        ),
    ]  # fmt: skip
    differing = command_refusals_differing(requests, work)
    return {"requests": len(requests), "requests_differing": len(differing), "differing": differing}
