"""``pv evidence verify``, ``pv evidence gc``, ``pv promote`` and ``pv report``.

Exit codes: 0 success, 1 a finding (a bundle that does not verify, a status that would change
under ``--check``, nothing to verify), 2 usage (a path that does not exist, a bad option).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from pv.app import app
from pv.config import ConfigError, PvConfig, load_config

evidence_app = typer.Typer(name="evidence", help="Check and tidy evidence bundles.", no_args_is_help=True)
app.add_typer(evidence_app, name="evidence")

EvidenceOpt = Annotated[
    Path | None, typer.Option("--evidence", help="Evidence directory (default: [tool.pv] evidence).")
]


def _usage(command: str, message: str) -> typer.Exit:
    typer.echo(f"pv {command}: {message}", err=True)
    return typer.Exit(2)


def _config(command: str, evidence: Path | None = None, contracts: Path | None = None) -> PvConfig:
    try:
        return load_config(evidence=evidence, contracts=contracts)
    except ConfigError as exc:
        raise _usage(command, str(exc)) from None


def _contract_files(command: str, config: PvConfig, paths: list[Path] | None) -> list[Path]:
    from pv.loader import find_contract_files

    targets = paths or [config.contracts]
    missing = [p for p in targets if not p.exists()]
    if missing:
        raise _usage(command, f"no such file or directory: {', '.join(map(str, missing))}")
    files = find_contract_files(targets)
    if not files:
        raise _usage(command, f"no contract files under {', '.join(map(str, targets))}")
    return files


@evidence_app.command("verify")
def verify(
    path: Annotated[
        Path | None, typer.Argument(help="A bundle, a contract's evidence folder, or the evidence folder.")
    ] = None,
    allow_stale: Annotated[
        bool, typer.Option("--allow-stale", help="Intact bundles of since-edited contracts do not fail.")
    ] = False,
) -> None:
    """Recompute every digest, check each bundle against its schema and the current contract bytes."""
    from pv.evidence.verify import leftover_tmp_dirs, verify_path

    config = _config("evidence verify")
    target = path if path is not None else config.evidence
    if not target.exists():
        raise _usage("evidence verify", f"{target} does not exist")
    reports = verify_path(target, config.root)
    counts = Counter(r.status for r in reports)
    for r in reports:
        typer.echo(f"{r.status:<12} {config.relpath(r.path)}")
        for p in r.problems:
            typer.echo(f"    {p.format()}")
        for note in r.notes:
            typer.echo(f"    note: {note}")
    tmp = leftover_tmp_dirs(target)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"
    typer.echo(
        f"{len(reports)} bundles: {summary}" + (f"; {len(tmp)} unfinished .tmp-* folders ignored" if tmp else "")
    )
    if not reports:
        typer.echo("pv evidence verify: no bundles found", err=True)
        raise typer.Exit(1)
    failed = [r for r in reports if not (r.ok or (allow_stale and r.intact))]
    raise typer.Exit(1 if failed else 0)


@evidence_app.command("gc")
def gc(
    keep: Annotated[int, typer.Option("--keep", min=1, help="Bundles to keep per contract, newest first.")] = 5,
    evidence: EvidenceOpt = None,
    contracts: Annotated[
        Path | None, typer.Option("--contracts", help="Contracts directory (default: [tool.pv] contracts).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be removed.")] = False,
) -> None:
    """Keep the newest N bundles per contract, never the one backing a contract's status nor one its
    changelog names; remove .tmp-* folders that killed writers left."""
    from pv.evidence import gc as gc_mod
    from pv.evidence.status import assess

    config = _config("evidence gc", evidence, contracts)
    if not config.evidence.is_dir():
        raise _usage("evidence gc", f"{config.evidence} does not exist")
    backing: list[Path] = []
    if config.contracts.is_dir():
        for path in _contract_files("evidence gc", config, None):
            found = assess(config.evidence, path, root=config.root)
            if found.bundle_path is not None:
                backing.append(found.bundle_path)
            backing.extend(gc_mod.changelog_bundles(path, config.root))
    plan = gc_mod.plan(config.evidence, keep, backing)
    verb = "would remove" if dry_run else "removed"
    for p in [*plan.tmp, *plan.remove]:
        typer.echo(f"{verb} {config.relpath(p)}")
    if not dry_run:
        gc_mod.apply(plan)
    typer.echo(
        f"{len(plan.remove)} bundles and {len(plan.tmp)} .tmp-* folders {verb}; "
        f"{len(plan.keep) + len(plan.protected)} kept ({len(plan.protected)} back a status)"
    )


@app.command()
def promote(
    contracts: Annotated[
        list[Path] | None, typer.Argument(help="Contract files or folders (default: [tool.pv] contracts).")
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Change nothing; exit 1 if any status would change.")] = False,
    evidence: EvidenceOpt = None,
) -> None:
    """Move each contract's status to what its newest verified, current evidence supports."""
    from pv.loader import load_contract_file
    from pv.promote import PromoteError, apply, decide

    config = _config("promote", evidence)
    changed = errors = 0
    for path in _contract_files("promote", config, contracts):
        shown = config.relpath(path)
        loaded = load_contract_file(path)
        if not loaded.ok:
            errors += 1
            typer.echo(f"{shown}: not promoted: the contract does not validate (run `pv validate`)", err=True)
            continue
        try:
            decision = decide(path, config.evidence, config.root)
            for warning in decision.warnings:
                typer.echo(f"{shown}: warning: {warning}", err=True)
            if not decision.changed:
                typer.echo(f"{shown}: {decision.current.value} ({decision.reason})")
                continue
            changed += 1
            arrow = f"{decision.current.value} -> {decision.target.value}"
            if check:
                typer.echo(f"{shown}: would change {arrow} ({decision.reason})")
            else:
                apply(decision, root=config.root)
                typer.echo(f"{shown}: {arrow} ({decision.reason})")
        except (PromoteError, OSError, UnicodeDecodeError) as exc:
            errors += 1
            typer.echo(f"{shown}: not promoted: {exc}", err=True)
    if errors:
        raise typer.Exit(2)
    raise typer.Exit(1 if check and changed else 0)


@app.command()
def report(
    base: Annotated[str | None, typer.Option("--base", help="Git ref whose evidence to compare against.")] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="markdown, or github (also the job summary).")
    ] = "markdown",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the Markdown to FILE.")] = None,
    contracts: Annotated[
        Path | None, typer.Option("--contracts", help="Contracts directory (default: [tool.pv] contracts).")
    ] = None,
    evidence: EvidenceOpt = None,
) -> None:
    """Markdown for a pull request: denominators, a table per contract, changes against --base."""
    from pv.report import ReportError, build, render_markdown

    if fmt not in ("markdown", "github"):
        raise _usage("report", f"unknown --format {fmt!r}; choose markdown or github")
    config = _config("report", evidence, contracts)
    try:
        text = render_markdown(build(_contract_files("report", config, None), config.evidence, config.root, base))
    except ReportError as exc:
        raise _usage("report", str(exc)) from None
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        typer.echo(text, nl=False)
    if fmt == "github":
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if not summary:
            typer.echo("pv report: GITHUB_STEP_SUMMARY is not set; printed only", err=True)
        else:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(text)
