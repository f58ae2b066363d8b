"""The engine's command line as falsifiers drive it: in process, exactly as ``python -m engine`` runs.

``cli_runner()`` gives ``run(*args) -> Result`` (Typer's test runner over the engine's app, every
command module registered); ``refused_cleanly`` is the one reading of "bad input is refused" that
the falsifiers share: exit code 2 by ``SystemExit``, an ``error:`` line naming what is at fault, no
traceback, and nothing written where the refused run would have written.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from engine.__main__ import COMMAND_MODULES
from engine.app import app

EXIT_BAD_INPUT = 2


def cli_runner() -> Callable[..., Any]:
    """``run(*args)``: invoke ``python -m engine ARGS`` in this process (arguments are str()-ed)."""

    for module in COMMAND_MODULES:
        importlib.import_module(module)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def refused_cleanly(result: Any, names: Iterable[str] = (), not_written: Iterable[Path] = ()) -> bool:
    """Whether ``result`` is a clean refusal: exit 2, ``error:``, each of ``names`` in the output
    (case-insensitive), no traceback, and none of ``not_written`` on disk afterwards."""
    output = str(result.output)
    return (
        result.exit_code == EXIT_BAD_INPUT
        and isinstance(result.exception, SystemExit)
        and "error:" in output.lower()
        and all(str(n).lower() in output.lower() for n in names)
        and "Traceback" not in output
        and not any(Path(p).exists() for p in not_written)
    )
