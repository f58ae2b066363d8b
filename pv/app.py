"""The ``pv`` Typer application; command modules in ``pv.commands`` attach themselves to it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="pv",
    help="Contract-first falsification harness for ML training and inference code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
