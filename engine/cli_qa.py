"""``python -m engine qa CKPT``: the QA gates of :mod:`engine.qa` as a table or ``--json``.

Exit status: 0 when no gate failed, 1 when one did, 2 on bad input (an unreadable golden file).

Imports inside functions: each command imports torch, rich and the engine modules it uses when it
runs, so `python -m engine --help`, a refused option and shell completion answer without loading
torch (`python -X importtime -m engine --help` shows no torch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from engine import cli_support as cli
from engine.app import app
from engine.faults import FAULTS

EXIT_GATE_FAILED = 1
_STYLE = {"pass": "green", "fail": "bold red", "skipped": "yellow", "inconclusive": "magenta"}


@app.command()
def qa(
    checkpoint: Annotated[Path, typer.Argument(help="The engine checkpoint to check.")],
    golden: Annotated[Path | None, typer.Option(help="Golden output file: a prompt and its expected tokens.")] = None,
    write_golden: Annotated[
        Path | None, typer.Option("--write-golden", help="Write this checkpoint's golden output file and stop.")
    ] = None,
    max_ppl: Annotated[float | None, typer.Option("--max-ppl", min=1.0, help="Perplexity bound on --text.")] = None,
    min_tok_s: Annotated[
        float | None, typer.Option("--min-tok-s", min=0.0, help="Throughput floor, greedy tokens per second.")
    ] = None,
    text: Annotated[
        Path | None, typer.Option(help="Held-out text for the perplexity gate (default: built in).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N.")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Check a checkpoint: loads, tokenizer round trip, finite logits, golden output, perplexity, throughput."""
    from engine.atomic import write_atomic
    from engine.checkpoint import load_checkpoint
    from engine.qa import HELD_OUT_TEXT, QAOptions, golden_record, read_held_out, run_qa

    if write_golden is not None:
        loaded = cli.guarded(lambda: load_checkpoint(checkpoint, device=device))
        record = json.dumps(golden_record(loaded), indent=2, ensure_ascii=False) + "\n"
        if FAULTS.active("qa_golden_write_unguarded"):  # the defect: a failed write ends in a traceback
            write_atomic(write_golden, record)  # pragma: no mutate
        cli.guarded(lambda: write_atomic(write_golden, record))
        cli.err.print(f"wrote golden output of {checkpoint} to {write_golden}", markup=False)
        return
    held_out = HELD_OUT_TEXT
    if text is not None:
        held_out = cli.guarded(lambda: read_held_out(text))
    options = QAOptions(golden, max_ppl, min_tok_s, held_out, device=device)
    with cli.progress(f"qa {checkpoint.name}"):
        report = cli.guarded(lambda: run_qa(checkpoint, options))
    if as_json:
        cli.out.print(json.dumps(report.to_json(), indent=2, sort_keys=True), markup=False)
    else:
        table = Table(title=cli.text(f"qa {checkpoint}"))
        # a detail holds paths and texts a user must read whole: folded over lines, never cut
        overflow: Literal["fold", "ellipsis"] = "fold"
        if FAULTS.active("qa_table_detail_cut"):  # the defect: rich's default cuts a long word to "…"
            overflow = "ellipsis"  # pragma: no mutate
        for column in ("gate", "status", "value", "bound", "detail"):
            table.add_column(column, overflow=overflow)
        for g in report.gates:
            table.add_row(
                g.name,
                f"[{_STYLE[g.status]}]{g.status}[/]",
                "" if g.value is None else f"{g.value:.4g}",
                "" if g.bound is None else f"{g.bound:.4g}",
                cli.text(g.detail),
            )
        cli.out.print(table)
        cli.out.print(
            "PASS" if report.passed else "FAIL: " + ", ".join(g.name for g in report.gates if g.status == "fail"),
            markup=False,
        )
        unsure = [g.name for g in report.gates if g.status == "inconclusive"]
        if unsure:  # not a failure, and not a pass of that gate either: say so where it is read
            cli.out.print(
                f"INCONCLUSIVE (the machine was too busy to decide; rerun when it is quiet): {', '.join(unsure)}"
            )
    if not report.passed:
        raise typer.Exit(EXIT_GATE_FAILED)
