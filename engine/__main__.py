"""``python -m engine``: imports the command modules so they register, then runs the app.

Imports inside functions: pv (its help-text reflow) loads only when the command line runs, not when
the package is imported.
"""

from __future__ import annotations

import importlib

from engine.app import app
from engine.faults import FAULTS

COMMAND_MODULES: list[str] = [
    "engine.cli_core",
    "engine.cli_train",
    "engine.cli_convert",
    "engine.cli_qa",
]


def main() -> None:
    from pv.help_text import reflow_commands

    for name in COMMAND_MODULES:
        if FAULTS.active("cli_qa_unregistered") and name == "engine.cli_qa":  # the defect: qa left out
            continue  # pragma: no mutate
        importlib.import_module(name)
    reflow_commands(app)
    app()


if __name__ == "__main__":
    main()
