"""Command help that reads as written: each docstring paragraph becomes one line the terminal wraps.

Typer's rich help keeps a docstring's hard newlines, so a description wrapped at 100 columns in
the source breaks mid-sentence in an 80- or 200-column terminal.  :func:`reflow_commands` gives
every command without an explicit ``help=`` its docstring with the lines of each paragraph joined
(blank lines still separate paragraphs), for an app and every sub-app it holds.
"""

from __future__ import annotations

import inspect
from typing import Any


def one_paragraph_per_line(doc: str) -> str:
    """``doc`` dedented, the lines of each paragraph joined by single spaces."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs)


def reflow_commands(app: Any) -> None:
    """Set the help of ``app``'s commands (and its sub-apps' and callbacks') from their docstrings."""
    for command in app.registered_commands:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = one_paragraph_per_line(command.callback.__doc__)
    info = app.registered_callback
    if info is not None and info.help is None and info.callback is not None and info.callback.__doc__:
        info.help = one_paragraph_per_line(info.callback.__doc__)
    for group in app.registered_groups:
        reflow_commands(group.typer_instance)
