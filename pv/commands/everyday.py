"""The everyday commands: ``pv scaffold``, ``pv status``, ``pv diff``, ``pv graph``, ``pv coverage``.

Each reads the contracts folder, checker packages and evidence folder from ``[tool.pv]`` (see
:mod:`pv.config`), so they work in any repository.  Exit codes: 0 success, 1 a finding (an
unbacked status, a version that did not bump enough, a dependency cycle, a falsifier that could
not be scaffolded), 2 usage (a missing file, not a contract, a bad git ref, bad configuration).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from pv.app import app
from pv.config import ConfigError, PvConfig
from pv.project import Project


def _fail(command: str, message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"pv {command}: {message}", err=True)
    return typer.Exit(code)


def _project(command: str) -> Project:
    try:
        project = Project.open()
        project.config.key_ring()  # a missing or broken trusted-keys file is a configuration error, up front
        return project
    except ConfigError as exc:
        raise _fail(command, f"configuration error: {exc}") from None


def _examples(*lines: str) -> str:
    # one paragraph per example: the help formatter joins lines within a paragraph
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def _json_out(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


# --- scaffold -----------------------------------------------------------------------------------


@app.command(
    epilog=_examples(
        "pv scaffold contracts/qlora-compose-v1.yaml",
        "pv scaffold contracts/qlora-compose-v1.yaml --falsifier FALSIFY-QLORA-002",
        "pv scaffold --new my-claim-v1",
    )
)
def scaffold(
    contract: Annotated[Path | None, typer.Argument(help="The contract whose unbound falsifiers get stubs.")] = None,
    falsifier: Annotated[str | None, typer.Option("--falsifier", help="Only this FALSIFY id.", metavar="ID")] = None,
    new: Annotated[
        str | None,
        typer.Option("--new", help="Start contracts/NAME.yaml from a template that validates.", metavar="NAME"),
    ] = None,
) -> None:
    """Write checker stubs into the checker package for falsifiers that have no bound checker.

    Each stub is registered with the falsifier's id, takes its params as keyword arguments,
    declares the observations its expect reads, and raises until written, so it can only ever
    end as an error, never as a pass.  Existing functions are never overwritten.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.scaffold import ScaffoldError, new_contract
    from pv.scaffold import scaffold as run_scaffold

    config = _project("scaffold").config
    if new is not None:
        if contract is not None or falsifier is not None:
            raise _fail("scaffold", "--new takes no CONTRACT and no --falsifier")
        try:
            path = new_contract(config, new)
        except ScaffoldError as exc:
            raise _fail("scaffold", str(exc)) from None
        except FileExistsError as exc:
            raise _fail("scaffold", str(exc), 1) from None
        typer.echo(f"wrote {config.relpath(path)}")
        typer.echo(f"next: edit the claim, then `pv scaffold {config.relpath(path)}` writes its checker stub")
        return
    if contract is None:
        raise _fail("scaffold", "name a CONTRACT file, or use --new NAME (see pv scaffold --help)")
    try:
        outcome = run_scaffold(config, contract, falsifier)
    except ScaffoldError as exc:
        raise _fail("scaffold", str(exc)) from None
    for path, stub in outcome.written:
        typer.echo(f"wrote {config.relpath(path)}: {stub.function} for {', '.join(stub.ids)}")
    for fid, ref in outcome.bound:
        typer.echo(f"{fid}: bound to {ref}, nothing to do")
    for fid, line in outcome.check_lines:
        typer.echo(f"{fid} has no check: add this line to it in {contract}:\n    {line}")
    for note in outcome.notes:
        typer.echo(f"note: {note}")
    for problem in outcome.problems:
        typer.echo(f"error: {problem}", err=True)
    written = sum(len(s.ids) for _, s in outcome.written)
    typer.echo(f"{written} stub(s) written, {len(outcome.bound)} already bound, {len(outcome.problems)} not scaffolded")
    raise typer.Exit(1 if outcome.problems else 0)


# --- status ------------------------------------------------------------------------------------


@app.command(epilog=_examples("pv status", "pv status nf4-quantization-v1 contracts/generation-v1.yaml --json"))
def status(
    contracts: Annotated[
        list[str] | None, typer.Argument(help="Contract files, folders or ids (default: every contract).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """One line per contract: status, version, falsifiers (ship-blocking/advisory) and where each
    stands in the newest verified evidence: survived, stale, skipped (reason), never run.

    Exit 1 when a contract does not load or declares a status its evidence does not back.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.statusview import SelectionError, contract_views, exit_code, select_contracts, status_lines

    project = _project("status")
    try:
        paths = select_contracts(project, contracts)
    except SelectionError as exc:
        raise _fail("status", str(exc)) from None
    views = contract_views(project, paths)
    if as_json:
        _json_out({"contracts": [v.to_json() for v in views], "ok": exit_code(views) == 0})
    else:
        typer.echo("\n".join(status_lines(views)))
    raise typer.Exit(exit_code(views))


# --- diff ---------------------------------------------------------------------------------------


@app.command(
    epilog=_examples(
        "pv diff old/qlora-compose-v1.yaml contracts/qlora-compose-v1.yaml",
        "pv diff --git origin/main",
        "pv diff --git HEAD~3 contracts/nf4-quantization-v1.yaml",
    )
)
def diff(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="OLD NEW contract files; with --git, optional files or folders to limit it to."),
    ] = None,
    git: Annotated[
        str | None, typer.Option("--git", help="Compare every contract changed since this git ref.", metavar="REF")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """What changed between two versions of a contract, by section, and the semver bump it needs:
    removing a falsifier or loosening a bound is major, adding one minor, rewording patch.

    Exit 1 when a declared version did not bump enough.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.diff import ContractDiff, GitError, diff_contracts, format_text
    from pv.loader import load_contract_file

    config = _project("diff").config
    diffs: list[ContractDiff] = []
    notes: list[str] = []
    if git is None:
        if not paths or len(paths) != 2:
            raise _fail("diff", "give two contract files, OLD and NEW, or --git REF (see pv diff --help)")
        contracts = []
        for p in paths:
            if not p.is_file():
                raise _fail("diff", f"{p}: no such file")
            loaded = load_contract_file(p)
            if loaded.contract is None:
                first = next((d for d in loaded.diagnostics if d.is_error), None)
                raise _fail("diff", f"{p} is not a valid contract: {first.format() if first else 'it does not load'}")
            contracts.append(loaded.contract)
        diffs.append(diff_contracts(contracts[0], contracts[1], f"{paths[0]} -> {paths[1]}"))
    else:
        try:
            diffs, notes = _git_diffs(config, git, paths or [])
        except GitError as exc:
            raise _fail("diff", str(exc)) from None
        except ValueError as exc:
            raise _fail("diff", str(exc)) from None
    bad = [d for d in diffs if not d.sufficient]
    if as_json:
        _json_out({"diffs": [d.to_json() for d in diffs], "notes": notes, "ok": not bad})
    else:
        for d in diffs:
            typer.echo("\n".join(format_text(d)))
        for note in notes:
            typer.echo(note)
        if git is not None:
            typer.echo(f"{len(diffs)} changed contract(s) since {git}; {len(bad)} without a sufficient version bump")
    raise typer.Exit(1 if bad else 0)


def _git_diffs(config: PvConfig, ref: str, limit: list[Path]) -> tuple[list[Any], list[str]]:
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.diff import changed_files, diff_contracts, load_bytes, repository_with_ref, show
    from pv.loader import load_contract_file

    for p in limit:
        if not p.exists():
            raise ValueError(f"{p}: no such file or directory")
    targets = [p.resolve() for p in limit] or [config.contracts]
    top = repository_with_ref(targets[0] if targets[0].exists() else config.root, ref)
    dirs = [t if t.is_dir() else t.parent for t in targets]
    files = [t.relative_to(top).as_posix() for t in targets if t.is_file()]
    rels = [r for r in changed_files(top, ref, dirs) if not files or r in files]
    diffs, notes = [], []
    for rel in rels:
        now = top / rel
        before = show(top, ref, rel)
        if before is None:
            notes.append(f"{rel}: new since {ref} (no earlier version to compare with)")
            continue
        if not now.exists():
            notes.append(f"{rel}: removed since {ref}")
            continue
        old = load_bytes(before, now.name, f"{ref}:{rel}")
        new = load_contract_file(now)
        if old.contract is None or new.contract is None:
            which = f"{ref}:{rel}" if old.contract is None else rel
            notes.append(f"{rel}: skipped, {which} does not load as a contract")
            continue
        diffs.append(diff_contracts(old.contract, new.contract, rel))
    return diffs, notes


# --- graph --------------------------------------------------------------------------------------


class GraphFormat(StrEnum):
    TEXT = "text"
    DOT = "dot"
    MERMAID = "mermaid"
    JSON = "json"


@app.command(epilog=_examples("pv graph", "pv graph --format dot | dot -Tsvg > deps.svg", "pv graph --format mermaid"))
def graph(
    output_format: Annotated[GraphFormat, typer.Option("--format", help="Output format.")] = GraphFormat.TEXT,
) -> None:
    """The depends_on graph of the contracts, each node with its declared status and the status
    its evidence supports. Exit 1 on a dependency cycle or a dependency that is not a contract.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.graph import build, render
    from pv.statusview import SelectionError, select_contracts

    project = _project("graph")
    try:
        paths = select_contracts(project, None)
    except SelectionError as exc:
        raise _fail("graph", str(exc)) from None
    g = build(project, paths)
    sys.stdout.write(render(g, output_format.value))
    if not g.ok and output_format is not GraphFormat.TEXT:
        for d in g.diagnostics:
            typer.echo(d.format(), err=True)
    raise typer.Exit(0 if g.ok else 1)


# --- coverage -----------------------------------------------------------------------------------


@app.command(epilog=_examples("pv inventory", "pv inventory --all", "pv inventory contracts/generation-v1.yaml --json"))
def inventory(
    contracts: Annotated[
        list[str] | None, typer.Argument(help="Contract files, folders or ids (default: every contract).")
    ] = None,
    all_rows: Annotated[bool, typer.Option("--all", help="List every checker and fault, not only the gaps.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """What the contracts never look at: per checker, the observations no expect reads; per
    registered fault, whether any falsifier declares it as its mutant and the evidence shows it
    killed. Exit 1 when a contract, a checker package or a mutant's module does not load.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv import inventory as inv
    from pv.statusview import SelectionError, contract_views, select_contracts

    project = _project("inventory")
    try:
        paths = select_contracts(project, contracts)
    except SelectionError as exc:
        raise _fail("inventory", str(exc)) from None
    views = contract_views(project, paths)
    found = inv.compute(project, views)
    if as_json:
        _json_out(found.to_json())
    else:
        inv.render(found, all_rows=all_rows)
    errors = [*(e for v in views for e in v.errors), *found.problems]
    for error in errors:
        typer.echo(f"error: {error}", err=True)
    raise typer.Exit(1 if errors else 0)


@app.command(epilog=_examples("pv coverage", "pv coverage nf4-quantization-v1 --json"))
def coverage(
    contracts: Annotated[
        list[str] | None, typer.Argument(help="Contract files, folders or ids (default: every contract).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Per contract and in total: obligations covered by falsifiers, falsifiers with survived
    evidence, falsifiers with a mutant, and mutants killed. Exit 1 when a contract does not load.
    """
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv import coverage as cov
    from pv.statusview import SelectionError, contract_views, select_contracts

    project = _project("coverage")
    try:
        paths = select_contracts(project, contracts)
    except SelectionError as exc:
        raise _fail("coverage", str(exc)) from None
    views = contract_views(project, paths)
    rows, total = cov.compute(views)
    if as_json:
        _json_out(cov.to_json(rows, total))
    else:
        cov.render_table(rows, total)
    for v in views:
        for error in v.errors:
            typer.echo(f"error: {error}", err=True)
    raise typer.Exit(1 if any(not v.loaded for v in views) else 0)
