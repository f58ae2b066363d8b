"""Refusals read word for word: each call must raise the exception named, with exactly the message,
and each command line must exit 2 printing exactly ``error: `` and the message.

Falsifiers that hold a refusal's whole message (not only a name in it) to the text they write out
share these loops; what differs is returned as readable lines for the evidence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from falsifiers.shared.cli import EXIT_BAD_INPUT, cli_runner

Refusal = tuple[Callable[[], object], type[BaseException] | tuple[type[BaseException], ...], str]


def refusals_differing(requests: Iterable[Refusal]) -> list[str]:
    """For each ``(call, exception type(s), message)``: "not refused" when the call returns, the
    message and the expected text when they differ, the exception when the call fails another way
    (a crash where a refusal was due is a difference, not an error of the falsifier); nothing when
    the refusal is word for word."""
    differing = []
    for call, refused, message in requests:
        try:
            call()
        except refused as exc:
            if str(exc) != message:
                differing.append(f"{str(exc)!r} != {message!r}")
            continue
        except Exception as exc:
            differing.append(f"{type(exc).__name__}: {str(exc)!r} instead of the refusal {message!r}")
            continue
        differing.append(f"not refused: {message!r}")
    return differing


def command_refusals_differing(requests: Iterable[tuple[tuple[Any, ...], str]], cwd: Path) -> list[str]:
    """For each ``(arguments, message)``, ``python -m engine ARGUMENTS`` run in this process from
    ``cwd`` (relative paths as a user types them): anything but exit 2 with stderr reading exactly
    ``error: message``, whitespace joined (rich may wrap a long line), is a difference."""

    run = cli_runner()
    differing = []
    for args, message in requests:
        with contextlib.chdir(cwd):
            result = run(*args)
        text = " ".join(str(result.stderr).split())
        want = " ".join(f"error: {message}".split())
        if result.exit_code != EXIT_BAD_INPUT or text != want:
            differing.append(f"{' '.join(map(str, args))}: exit {result.exit_code}, {text[-300:]!r} != {want!r}")
    return differing
