"""``python -m engine --help``: every command a user can run, each with its summary.

The commands are those the ``engine/cli_*.py`` modules register on the engine's app, found here by
importing every such file (not through the list ``engine.__main__`` keeps); each one's summary is
the first paragraph of its function's docstring.  The index is read twice: from
``engine.__main__.main`` run in this process, and from ``python -m engine --help`` in a fresh
interpreter, where only what ``main`` imports is registered.  Rich's table borders and line
wrapping are taken out before the text is compared.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine
from engine.__main__ import main
from engine.app import app
from pv.checkers import checker

CLI_TIMEOUT_S = 300


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").replace("╭", " ").replace("╰", " ").split())


def expected_commands() -> dict[str, str]:
    """Command name -> the first paragraph of its docstring, for every command module's command."""

    for path in sorted(Path(engine.__file__).parent.glob("cli_*.py")):
        importlib.import_module(f"engine.{path.stem}")
    out = {}
    for command in app.registered_commands:
        callback = command.callback
        if callback is None or command.hidden:
            continue
        name = command.name or callback.__name__.replace("_", "-")
        out[name] = " ".join((callback.__doc__ or "").strip().split("\n\n")[0].split())
    return out


def _listed(text: str, commands: dict[str, str]) -> int:
    flat = _flat(text)
    return sum(f"{name} {summary}" in flat for name, summary in commands.items())


@checker(observes=["commands", "exit_codes_nonzero", "listed_in_process", "listed_fresh"], ids=["FALSIFY-IO-015"])
def cli_index_lists_every_command() -> dict[str, Any]:
    """engine.__main__.main with --help here, and python -m engine --help in a child."""

    commands = expected_commands()
    buffer, argv = io.StringIO(), sys.argv
    code: Any = 0
    sys.argv = ["engine", "--help"]
    try:
        with contextlib.redirect_stdout(buffer):
            main()
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = argv
    root = Path(engine.__file__).resolve().parents[1]  # the engine this process runs
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    fresh = subprocess.run(
        [sys.executable, "-m", "engine", "--help"],
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False, env=env, cwd=root,
    )  # fmt: skip
    return {
        "commands": len(commands),
        "exit_codes_nonzero": (code not in (0, None)) + (fresh.returncode != 0),
        "listed_in_process": _listed(buffer.getvalue(), commands),
        "listed_fresh": _listed(fresh.stdout, commands),
    }
