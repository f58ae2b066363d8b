"""``pv report`` (the review of the evidence, base against head) and ``pv review changed|publish``.

Exit codes: 0 success, 2 usage (an unknown ref or format, a folder that is not a review, GitHub
refusing a request).  ``pv report`` never fails on what it reports: the check run it writes is the
merge gate (``--out-dir``), and ``pv promote --check`` the status gate.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pv.app import app
from pv.commands.evidence import EvidenceOpt, _contract_files, _keys, _project, _usage

review_app = typer.Typer(name="review", help="What a change touches, and the review on GitHub.", no_args_is_help=True)
app.add_typer(review_app, name="review")

ContractsOpt = Annotated[
    Path | None, typer.Option("--contracts", help="Contracts directory (default: [tool.pv] contracts).")
]


class ReportFormat(StrEnum):
    MARKDOWN = "markdown"
    GITHUB = "github"
    JSON = "json"
    HTML = "html"
    MUTATION = "mutation-elements"


@app.command()
def report(
    base: Annotated[
        str | None, typer.Option("--base", help="Git ref to compare against: its code's evidence is the base.")
    ] = None,
    fmt: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            help="markdown; github (the comment, also appended to the job summary, and annotations); json; "
            "html (one self-contained file with plots); mutation-elements (the mutation-testing-elements schema).",
        ),
    ] = ReportFormat.MARKDOWN,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Write every form (comment, summary, JSON, HTML, check run) to DIR."),
    ] = None,
    history: Annotated[int, typer.Option("--history", min=0, help="Runs of the base's line shown per falsifier.")] = 20,
    threshold: Annotated[
        float,
        typer.Option("--threshold", min=0.0, help="Relative change that counts for a value without an interval."),
    ] = 0.05,
    link: Annotated[
        str | None, typer.Option("--link", help="Where the HTML report will be (the comment links it).")
    ] = None,
    contracts: ContractsOpt = None,
    evidence: EvidenceOpt = None,
) -> None:
    """The review: verdict first, then each falsifier the change moved, base against head, with history."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.review import compare, github
    from pv.review.sections import ReportError

    project = _project("report", evidence, contracts)
    keys = _keys("report", project.config)
    try:
        files = _contract_files("report", project, None)
        found = compare.review(project, files, base, keys, threshold=threshold, history=history)
    except ReportError as exc:
        raise _usage("report", str(exc)) from None
    forms = github.Forms(found, link, project.root)
    if out_dir is not None:
        written = github.write_outputs(forms, out_dir)
        typer.echo(f"pv report: wrote {', '.join(p.name for p in written.values())} to {out_dir}", err=True)
    by_format = {
        ReportFormat.MARKDOWN: "markdown",
        ReportFormat.GITHUB: "comment",
        ReportFormat.JSON: "json",
        ReportFormat.HTML: "html",
        ReportFormat.MUTATION: "mutation",
    }
    text = getattr(forms, by_format[fmt])
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        typer.echo(text, nl=False)
    if fmt is ReportFormat.GITHUB:
        for line in github.workflow_commands(forms.annotations):
            typer.echo(line)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if not summary:
            typer.echo("pv report: GITHUB_STEP_SUMMARY is not set; printed only", err=True)
        else:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(forms.summary)


@review_app.command("changed")
def changed(
    base: Annotated[str, typer.Option("--base", help="Git ref the working tree is compared with.")],
    ids: Annotated[bool, typer.Option("--ids", help="Print pytest node ids only, one per line.")] = False,
    contracts: ContractsOpt = None,
) -> None:
    """The falsifiers the working tree changes against --base: contract entry, checker, code under test.

    pytest runs them with `--pv-changed-since REF` (each gets the `pv_changed` marker), so a pull
    request measures what it changes:
    `pytest contracts -m "ship_blocking or pv_changed" --pv-changed-since origin/main`.
    """
    # the command's modules load when it runs (git, the code scope), as for every pv command
    from pv.review.compare import changed_selection
    from pv.review.sections import ReportError

    project = _project("review changed", None, contracts)
    try:
        found = changed_selection(project, base, _contract_files("review changed", project, None))
    except ReportError as exc:
        raise _usage("review changed", str(exc)) from None
    for c in found:
        node = f"{c.contract_path}::{c.falsifier_id}"
        typer.echo(node if ids else f"{node}  {'; '.join(c.reasons)}")
    if not ids:
        typer.echo(f"{len(found)} falsifier(s) changed against {base}", err=True)


@review_app.command("publish")
def publish(
    folder: Annotated[Path, typer.Argument(help="The folder `pv report --out-dir` wrote.")],
    pr: Annotated[int, typer.Option("--pr", help="The pull request's number.")],
    sha: Annotated[str, typer.Option("--sha", help="The commit the check run is on (the PR's head).")],
    repo: Annotated[str | None, typer.Option("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY).")] = None,
) -> None:
    """Post the review: one comment updated in place, a check run with annotations ($GITHUB_TOKEN).

    Runs in a `workflow_run` workflow, which may write where a fork's pull request may not; it reads
    only the files in FOLDER, never the pull request's code."""
    # urllib and the review's writers load only when publishing
    from pv.review.github import PublishError, publish_from_env

    try:
        done = publish_from_env(folder, repo, pr, sha)
    except PublishError as exc:
        raise _usage("review publish", str(exc)) from None
    verb = "posted" if done.comment_created else "updated"
    typer.echo(f"comment {done.comment_id} {verb}; check run {done.check_run_id} with {done.annotations} annotations")
