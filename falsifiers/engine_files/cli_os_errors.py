"""What inspect, export and qa print when a file they read or write fails them, word for word.

A refused command prints one line, ``error: `` and the cause, and exits 2.  For an operating-system
failure the cause is the path the system named, as the user typed it (relative stays relative),
and the system's reason (``os.strerror`` of its errno), not Python's ``[Errno N] ...: '...'``
rendering and never a traceback; a held-out text that is not UTF-8 is refused naming the file and
the first byte that is not.  The expected lines are written out here; rich may wrap a long line,
so the output's whitespace is joined before comparing.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import command_refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NOT_UTF8 = b"def f():\n    return '\xff'\n"


@checker(observes=["requests", "requests_differing", "differing", "left_behind"], ids=["FALSIFY-IO-020"])
def os_errors_word_for_word(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """export and qa --write-golden below a regular file, qa --text on a folder and on bytes that
    are not UTF-8, qa --golden on a file that is not there; relative paths, from the work folder."""

    work = fresh_dir(tmp_path, "os-errors-")
    # relative, as typed, and starting with a letter the reason's separator is not made of
    ckpt = Path("XL.safetensors")
    save_checkpoint(work / ckpt, tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    folder = Path("Xdir")
    (work / folder).mkdir()
    latin = Path("held-out.txt")
    (work / latin).write_bytes(NOT_UTF8)
    below = ckpt / "sub"  # a path through a regular file: the system refuses it as no directory
    not_a_dir = f"{below}: {os.strerror(errno.ENOTDIR)}"
    requests: list[tuple[tuple[Any, ...], str]] = [
        (("export", ckpt, "-o", below / "out.gguf", "--format", "gguf"), not_a_dir),
        (("qa", ckpt, "--write-golden", below / "golden.json"), not_a_dir),
        (("qa", ckpt, "--text", folder), f"{folder}: {os.strerror(errno.EISDIR)}"),
        (("qa", ckpt, "--text", latin), f"held-out text {latin}: not UTF-8 text (byte {NOT_UTF8.index(0xFF)})"),
        (("qa", ckpt, "--golden", "missing.json"), f"missing.json: {os.strerror(errno.ENOENT)}"),
    ]
    differing = command_refusals_differing(requests, work)
    # a refused write leaves no temporary file beside what it would have written
    left = sorted(p.name for p in work.iterdir() if p.name not in {ckpt.name, folder.name, latin.name})
    return {
        "requests": len(requests),
        "requests_differing": len(differing),
        "differing": differing,
        "left_behind": left,
    }
