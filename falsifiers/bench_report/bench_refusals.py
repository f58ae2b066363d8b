"""What ``python -m engine bench`` refuses before it measures anything, word for word.

A misspelt brick or preset must stop the command with exit 2 and a message naming what was wrong
and what is known, not measure the bricks it did recognise (a CI job comparing reports would then
read a report missing the brick it asked for as a pass), nor write the --json report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from falsifiers.shared.refusals import command_refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

KNOWN = "known: lora_forward, optimizer, loss, train_step, ttft, throughput, batch, all"


@checker(observes=["refusals_differing", "reports_written"], ids=["FALSIFY-BREP-008"])
def bench_refuses_unknown_names(tmp_path: Path) -> dict[str, Any]:
    """bench with a misspelt brick beside a known one, two unknown bricks, an unknown preset and a
    single repetition, each asked to write a --json report."""
    work = fresh_dir(tmp_path, "bench-refusals-")
    quick = ("--reps", "2", "--warmup", "0", "--json", "report.json")
    requests: list[tuple[tuple[Any, ...], str]] = [
        (("bench", "--brick", "loss", "--brick", "los", *quick), f"unknown brick(s) los; {KNOWN}"),
        (("bench", "--brick", "nope", "--brick", "other", *quick), f"unknown brick(s) nope, other; {KNOWN}"),
        (
            ("bench", "--brick", "loss", "--preset", "huge", *quick),
            "unknown preset 'huge'; known: tiny, small, qwen2.5-0.5b, qwen2.5-7b",
        ),
        (("bench", "--brick", "loss", "--reps", "1", "--json", "report.json"), "reps must be >= 2 to give a spread"),
    ]
    differing = command_refusals_differing(requests, work)
    return {"refusals_differing": differing, "reports_written": int((work / "report.json").exists())}
