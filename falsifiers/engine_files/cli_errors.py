"""A command's error names what is at fault as it is spelled: a path with brackets included.

The command line prints its errors through rich, whose markup reads ``[...]`` as a style.  A run
folder such as ``runs/[v1]`` or a data file such as ``data[0].jsonl`` is a valid path; a refusal
that names it must print it as it is, after ``error:``, with no markup left in the text.  The
requests go through the command line as ``python -m engine`` runs them; the expected line is
written out here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(observes=["requests", "named_as_spelled", "unnamed"], ids=["FALSIFY-IO-011"])
def errors_name_paths_as_spelled(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """Refusals whose culprit is a path with square brackets in it: each stderr line that reports
    the error must read ``error: `` followed by a message holding the path exactly."""

    work = fresh_dir(tmp_path, "bracket-errors-")
    runs = work / "runs" / "[v1]"
    runs.mkdir(parents=True)
    ckpt = save_checkpoint(runs / "model.safetensors", tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    notes = runs / "notes[draft].json"
    notes.write_text('{"not": "a checkpoint"}', encoding="utf-8")
    requests: list[tuple[tuple[Any, ...], Path]] = [
        (("inspect", runs / "missing[1].safetensors"), runs / "missing[1].safetensors"),
        (("inspect", notes), notes),
        (("generate", notes, "-p", "x"), notes),
        (("qa", ckpt, "--golden", work / "golden[b].json"), work / "golden[b].json"),
        (("finetune", ckpt, work / "out", "--data", work / "data[red].jsonl"), work / "data[red].jsonl"),
    ]
    run = cli_runner()
    unnamed: list[str] = []
    for args, culprit in requests:
        result = run(*args)
        # rich may wrap a long line: join the error's lines, then look for the path in one piece
        text = " ".join(str(result.stderr).split())
        line = text[text.find("error:") :] if "error:" in text else ""
        if not (result.exit_code == 2 and line.startswith("error: ") and str(culprit) in line.replace(" ", "")):
            unnamed.append(f"{args[0]} {culprit.name}: exit {result.exit_code}")
    return {"requests": len(requests), "named_as_spelled": len(requests) - len(unnamed), "unnamed": unnamed}
