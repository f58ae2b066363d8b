"""``pv lint``: run the quality gates over a contracts tree.  Exit 0 pass, 1 fail, 2 usage/internal."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from pv.app import app
from pv.config import ConfigError, load_config
from pv.gc_passes import without_gc_passes

FORMAT_NAMES = ("text", "json", "sarif", "github")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"pv lint: {message}", err=True)
    return typer.Exit(2)


def _check_base(contracts: Path, ref: str) -> None:
    """An explicit ``--base`` must name a commit: a typo must not quietly skip the bump check."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.diff import GitError, repository_with_ref

    try:
        repository_with_ref(contracts, ref)
    except GitError as exc:
        raise _fail(f"--base {ref}: {exc}") from None


@app.command()
def lint(
    contracts_dir: Annotated[
        Path | None,
        typer.Argument(
            help="Contracts directory (default: `contracts` under tool.pv in pyproject.toml, else contracts/).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json, sarif or github.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings count as errors.")] = False,
    strict_test_binding: Annotated[
        bool, typer.Option("--strict-test-binding", help="A missing or unimportable checker is an error.")
    ] = False,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Forgive findings listed in FILE; fixed ones are dropped from it.")
    ] = None,
    write_baseline: Annotated[
        bool, typer.Option("--write-baseline", help="Write every current finding to the --baseline FILE.")
    ] = False,
    explain: Annotated[str | None, typer.Option("--explain", help="Explain a rule code (or gate) and exit.")] = None,
    checker_package: Annotated[
        list[str] | None, typer.Option("--checker-package", help="Checker package (repeatable).")
    ] = None,
    evidence: Annotated[Path | None, typer.Option("--evidence", help="Evidence directory.")] = None,
    no_state: Annotated[bool, typer.Option("--no-state", help="Neither read nor write .pv/.")] = False,
    base: Annotated[
        str,
        typer.Option(
            "--base",
            help="Git ref the changelog gate checks version bumps against (in pull-request CI: the target "
            "branch, e.g. origin/main).",
        ),
    ] = "HEAD",
    pull_request: Annotated[
        bool,
        typer.Option(
            "--pr",
            help="A pull request: a status whose evidence measured other code or contract bytes than the "
            "PR's, or is the PR's own unsigned run, is a warning (the protected branch's CI measures and "
            "signs it); a falsified, blocked or tampered reading is still an error.",
        ),
    ] = False,
) -> None:
    """Run the gates (validate, binding, observations, falsifiability, coverage, references, status,
    changelog, duplicates) and print what each counted, its findings and the result."""
    if explain is not None:
        # the command's modules load when it runs, so every pv command starts without the others' imports
        from pv.lint.explain import explain as explain_code

        text = explain_code(explain)
        if text is None:
            raise _fail(f"unknown rule code {explain!r} (try a code such as PV102 or PVL301, or a gate name)")
        typer.echo(text)
        raise typer.Exit(0)
    if fmt not in FORMAT_NAMES:
        raise _fail(f"unknown --format {fmt!r}; choose one of {', '.join(FORMAT_NAMES)}")
    if write_baseline and baseline is None:
        raise _fail("--write-baseline needs --baseline FILE")
    try:
        config = load_config(
            contracts_dir if contracts_dir is not None else None,
            contracts=contracts_dir,
            checker_packages=checker_package,
            evidence=evidence,
        )
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if not config.contracts.is_dir():
        raise _fail(f"contracts directory {config.contracts} does not exist")
    if base != "HEAD":
        _check_base(config.contracts, base)

    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.lint import LintOptions
    from pv.lint import lint as run
    from pv.lint.baseline import BaselineError
    from pv.lint.formats import renderer
    from pv.lint.replay import LintArgs, inputs, store

    # a report no file or flag of this run can make differ from the next run's is kept for replay
    replayable = output is None and baseline is None and not write_baseline and not no_state
    args = LintArgs(
        contracts=str(contracts_dir) if contracts_dir is not None else None,
        format=fmt,
        strict=strict,
        strict_test_binding=strict_test_binding,
        checker_package=tuple(checker_package or ()),
        evidence=str(evidence) if evidence is not None else None,
        base=base,
        pr=pull_request,
    )
    before = inputs(args, config) if replayable else None

    options = LintOptions(
        strict=strict,
        strict_test_binding=strict_test_binding,
        baseline=baseline,
        write_baseline=write_baseline,
        use_state=not no_state,
        base_ref=base,
        pull_request=pull_request,
    )
    try:
        with without_gc_passes(freeze=True):  # the tree lives until the process ends
            report = run(config, options)
    except (BaselineError, ConfigError) as exc:
        raise _fail(str(exc)) from None
    except Exception:  # an internal error must not look like a lint failure (exit 1)
        typer.echo("pv lint: internal error", err=True)
        traceback.print_exc(file=sys.stderr)
        raise typer.Exit(2) from None
    rendered = renderer(fmt)(report)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(rendered, encoding="utf-8")
        typer.echo(f"Result: {'PASS' if report.passed else 'FAIL'} ({fmt} report written to {output})")
    else:
        typer.echo(rendered, nl=False)
        if before is not None:
            store(config, before, rendered, report.exit_code, steady=report.steady)
    raise typer.Exit(report.exit_code)
