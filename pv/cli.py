"""Console entry point: imports every command module so it registers on the app, then runs it."""

from __future__ import annotations

import importlib

from pv.app import app
from pv.help_text import reflow_commands

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
    for name in COMMAND_MODULES:
        importlib.import_module(name)
    reflow_commands(app)
    app()


if __name__ == "__main__":
    main()
