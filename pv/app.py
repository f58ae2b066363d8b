"""The ``pv`` Typer application; command modules in ``pv.commands`` attach themselves to it."""

from __future__ import annotations

import typer

from pv import __version__

app = typer.Typer(
    name="pv",
    help="Contract-first falsification harness for ML training and inference code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"pv {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print pv's version and exit."
    ),
) -> None:
    """Contract-first falsification harness for ML training and inference code."""
