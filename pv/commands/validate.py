"""``pv validate`` and ``pv schema``."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from pv.app import app
from pv.diagnostics import Diagnostic
from pv.gc_passes import without_gc_passes
from pv.model import Contract

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "contract.schema.json"


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class Dialect(StrEnum):
    PV = "pv"
    RUST = "rust"


def contract_schema() -> dict[str, Any]:
    """The JSON Schema of the contract format (pydantic's, with the draft and a title)."""
    schema = Contract.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "pv contract",
        "description": (
            "A pv contract: claims about an ML system as falsification tests, in the dialect of the "
            "Rust pv (metadata, equations, proof_obligations, falsification_tests, kani_harnesses, "
            "qa_gate) plus pv's runtime binding (check, params, expect, requires, mutant)."
        ),
    }


def schema_text() -> str:
    return json.dumps(contract_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _print_text(report_diagnostics: list[Diagnostic], summary: str, ok: bool) -> None:
    if sys.stdout.isatty():
        # rich loads only when text is printed; the validator only when the command runs (pv --help stays quick)
        from rich.console import Console
        from rich.markup import escape

        console = Console(highlight=False, soft_wrap=True)
        for d in report_diagnostics:
            colour = "red" if d.is_error else "yellow"
            console.print(
                f"[bold]{escape(d.path)}:{d.line}:{d.col}:[/bold] [{colour}]{d.code}[/{colour}] {escape(d.message)}"
            )
            if d.hint:
                console.print(f"    [dim]hint: {escape(d.hint)}[/dim]")
        console.print(f"[{'green' if ok else 'red'}]{escape(summary)}[/]")
        return
    lines = [d.format(hint=True) for d in report_diagnostics]
    lines.append(summary)
    sys.stdout.write("\n".join(lines) + "\n")


@app.command()
def validate(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Contract files or folders (recursive). Default: contracts/")
    ] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.TEXT,
    strict: Annotated[bool, typer.Option("--strict", help="Treat warnings as errors.")] = False,
    checker_package: Annotated[
        list[str] | None,
        typer.Option("--checker-package", help="Allowed checker package (repeatable); overrides configuration."),
    ] = None,
    dialect: Annotated[
        Dialect | None,
        typer.Option(
            "--dialect",
            help="rust: read contracts as the Rust pv writes them (unknown keys, id-less obligations, "
            "per-contract ids are warnings; files without metadata are skipped). Default: [tool.pv] dialect, else pv.",
        ),
    ] = None,
) -> None:
    """Check contracts statically: schema, ids, references, expect predicates. Exit 0 clean, 1 errors, 2 usage."""
    # rich loads only when text is printed; the validator only when the command runs (pv --help stays quick)
    from pv.config import ConfigError
    from pv.validate import validate_paths

    try:
        with without_gc_passes(freeze=True):  # the tree lives until the process ends
            report = validate_paths(
                paths or None,
                strict=strict,
                checker_packages=checker_package or None,
                dialect=dialect.value if dialect else None,
            )
    except ConfigError as exc:
        typer.echo(f"pv validate: configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except Exception as exc:  # a crash here is pv's bug; report it as one, never as "errors found"
        typer.echo(f"pv validate: internal error: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(2) from None
    if output_format is OutputFormat.JSON:
        sys.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        _print_text(report.diagnostics, report.summary(), report.exit_code == 0)
    raise typer.Exit(report.exit_code)


@app.command()
def schema(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to FILE instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of the contract format (for editors: yaml-language-server)."""
    text = schema_text()
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        typer.echo(f"pv schema: cannot write {output}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {output}", err=True)
