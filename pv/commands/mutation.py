"""``pv mutation report``: the kill ratio of a mutation run, per module, and which falsifiers killed what.

Exit codes: 0 success, 1 a module below ``--fail-under``, 2 usage (no results to read, a bad file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pv.app import app

if TYPE_CHECKING:
    from pv.mutation import MutationSummary

mutation_app = typer.Typer(
    name="mutation", help="Mutation testing: which falsifiers kill which mutants.", no_args_is_help=True
)
app.add_typer(mutation_app, name="mutation")


def _ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{100 * ratio:.1f}%"


@mutation_app.command("report")
def report(
    mutants: Annotated[Path, typer.Option("--mutants", help="The mutation tool's folder (mutmut: mutants/).")] = Path(
        "mutants"
    ),
    log: Annotated[
        Path | None,
        typer.Option("--log", help="pv's mutation log (default: <mutants>/pv-mutation-log.jsonl)."),
    ] = None,
    equivalent: Annotated[
        Path | None,
        typer.Option("--equivalent", help="Mutants reviewed as equivalent: `name  # reason` per line."),
    ] = None,
    only: Annotated[
        Path | None,
        typer.Option("--only", help="Score only the mutants named in this file, one per line (a sample)."),
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="Read a results file kept across runs (JSON lines: mutant, module, status, killers) "
            "instead of the tool's folder and pv's log.",
        ),
    ] = None,
    survivors: Annotated[int, typer.Option("--survivors", help="Survivors to list (0: none).")] = 20,
    by_function: Annotated[
        bool, typer.Option("--by-function", help="Count the survivors per module and function.")
    ] = False,
    fail_under: Annotated[
        float | None, typer.Option("--fail-under", help="Exit 1 if a module's kill ratio (percent) is below this.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole summary as JSON.")] = False,
) -> None:
    """Kill ratio per module = killed (incl. timeouts and crashes) / mutants that count (checked,
    not skipped, not reviewed as equivalent); mutants no falsifier reaches count as survivors."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.mutation import MutationReportError, read_equivalent, read_log, read_mutmut, read_results, summarize

    try:
        if results is not None:
            outcomes, runs = read_results(results)
        else:
            outcomes = read_mutmut(mutants)
            runs = read_log(log if log is not None else mutants / "pv-mutation-log.jsonl")
        equiv = read_equivalent(equivalent) if equivalent is not None else {}
        keep = [n.strip() for n in only.read_text(encoding="utf-8").split()] if only is not None else []
    except (MutationReportError, OSError) as exc:
        typer.echo(f"pv mutation report: {exc}", err=True)
        raise typer.Exit(2) from None
    summary = summarize(outcomes, runs, equiv, only=keep)
    if as_json:
        typer.echo(json.dumps(summary.to_json(), indent=2))
    else:
        _print(summary, survivors, by_function=by_function)
    if fail_under is not None:
        low = [s.module for s in summary.modules.values() if s.ratio is not None and 100 * s.ratio < fail_under]
        if low:
            typer.echo(f"below {fail_under:g}%: {', '.join(low)}", err=True)
            raise typer.Exit(1)


def _print(summary: MutationSummary, survivors: int, *, by_function: bool = False) -> None:
    typer.echo(
        f"{'module':<28} {'killed':>7} {'tested':>7} {'raw':>7} {'survived':>9} {'no tests':>9} {'equiv':>6} "
        f"{'w/o equiv':>9}"
    )
    for s in [*summary.modules.values(), summary.total]:
        typer.echo(
            f"{s.module:<28} {s.killed:>7} {s.tested:>7} {_ratio(s.raw_ratio):>7} {s.counts.get('survived', 0):>9} "
            f"{s.counts.get('no tests', 0):>9} {s.equivalent:>6} {_ratio(s.ratio):>9}"
        )
    if summary.kills_by_falsifier:
        typer.echo("\nkills per falsifier (first failure per mutant; pass --maxfail to see every killer):")
        for falsifier, n in summary.kills_by_falsifier.items():
            typer.echo(f"  {n:>5}  {falsifier}{'   <- killed nothing' if n == 0 else ''}")
    if summary.unexplained:
        typer.echo(
            f"\n{len(summary.unexplained)} killed mutants have no failing falsifier in the log (a crash, or no log)"
        )
    if summary.contradicted:
        typer.echo(
            f"\n{len(summary.contradicted)} mutants listed as equivalent were killed (counted as killed): "
            "each entry is wrong, or stale if its function changed and mutmut numbered its mutants anew"
        )
        for name in summary.contradicted:
            typer.echo(f"  {name}")
    if by_function and summary.survivors:
        typer.echo(f"\nsurvivors by function ({len(summary.survivors)}):")
        for (module, function), n in summary.survivors_by_function().items():
            typer.echo(f"  {n:>5}  {module}  {function}")
    if survivors and summary.survivors:
        typer.echo(f"\nsurvivors ({len(summary.survivors)}; `mutmut show NAME` prints the change):")
        for m in summary.survivors[:survivors]:
            typer.echo(f"  {m.status:<9} {m.name}")
        if len(summary.survivors) > survivors:
            typer.echo(f"  ... and {len(summary.survivors) - survivors} more (--survivors N)")
