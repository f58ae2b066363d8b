"""Running git: the one wrapper every command uses (diff, lint --base, report, the evidence environment)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Literal, overload

GIT_TIMEOUT_S = 60.0  # a git call that hangs (a credential prompt, a network mount) must not hang pv


class GitError(Exception):
    """git is missing, the folder is not a repository, a ref does not name a commit, or git hung."""


@overload
def run_git(cwd: Path, *args: str, binary: Literal[False] = False, timeout: float = GIT_TIMEOUT_S) -> str: ...
@overload
def run_git(cwd: Path, *args: str, binary: Literal[True], timeout: float = GIT_TIMEOUT_S) -> bytes: ...
def run_git(cwd: Path, *args: str, binary: bool = False, timeout: float = GIT_TIMEOUT_S) -> str | bytes:
    """git's stdout (text, or bytes with ``binary``); :class:`GitError` naming the command otherwise."""
    out = _git(cwd, list(args), None, timeout)
    return out if binary else out.decode("utf-8", "replace")


def _git(cwd: Path, args: list[str], stdin: bytes | None, timeout: float) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)}: no answer within {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


def cat_blobs(cwd: Path, specs: list[str], timeout: float = GIT_TIMEOUT_S) -> list[bytes | None]:
    """The contents of each ``REV:PATH`` (or blob id) in ``specs`` through one ``git cat-file --batch``;
    None for one git does not have.  One process for hundreds of files instead of one each."""
    if not specs:
        return []
    data = _git(cwd, ["cat-file", "--batch"], "".join(s + "\n" for s in specs).encode(), timeout)
    at = 0
    out: list[bytes | None] = []
    for _ in specs:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        at = end + 1
        if len(header) < 3 or header[-1] == b"missing":
            out.append(None)
            continue
        size = int(header[2])
        out.append(data[at : at + size])
        at += size + 1  # the newline after each object
    return out
