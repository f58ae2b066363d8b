"""The ``python -m engine`` Typer application; command modules attach themselves to it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="engine",
    help="The compact engine: train, fine-tune, inspect, generate and export small decoders.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
