"""Console entry point: imports every command module so it registers on the app, then runs it."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

# Each module in this list defines its commands with ``@app.command()``.
COMMAND_MODULES: list[str] = [
    "pv.commands.validate",
    "pv.commands.lint",
    "pv.commands.evidence",
    "pv.commands.review",
    "pv.commands.everyday",
    "pv.commands.mutation",
]


def main() -> None:
    if sys.argv[1:2] == ["lint"]:
        # before typer and the commands load: a lint with nothing changed prints its stored report
        from pv.lint.replay import replay

        code = replay(sys.argv[2:])
        if code is not None:
            raise SystemExit(code)
    # the help text is only for the command line the app is about to run
    from pv.help_text import reflow_commands

    app = _app()
    reflow_commands(app)
    app()


def _app() -> typer.Typer:
    """The app with every command on it."""
    # loaded on first use, so that a replayed `pv lint` never imports typer (main above)
    from pv.app import app

    for module in COMMAND_MODULES:
        importlib.import_module(module)
    return app


def __getattr__(name: str) -> typer.Typer:
    """`from pv.cli import app`: the app with every command on it."""
    if name != "app":
        raise AttributeError(f"module 'pv.cli' has no attribute {name!r}")
    return _app()


if __name__ == "__main__":
    main()
