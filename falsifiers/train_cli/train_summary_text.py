"""The JSON summary a training command prints, as a user's tools read it.

``pretrain`` into a run folder whose name holds brackets (``runs[v1]``, as versioned folders are
often named): standard output is exactly the summary as ``json.dumps(indent=2, sort_keys=True)``
writes it, its paths spelled as given (rich's markup would read ``[v1]`` as a style and drop it),
the checkpoint the folder ``latest.json`` names, the losses the run's log holds, and a throughput
of one decimal.  Resumed once finished, the same command runs no step and says so: no step-0 or
final loss, no validation, a throughput of 0.0, the same checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

ARGS = ("--steps", 2, "--batch-size", 2, "--seq-len", 16, "--eval-every", 2, "--save-every", 2, "--warmup", 0)


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text(encoding="utf-8").splitlines() if line]


@checker(
    observes=[
        "exit_codes_nonzero", "not_canonical", "paths_differing", "losses_differing", "throughput_not_one_decimal",
        "resumed_differing",
    ],
    ids=["FALSIFY-TCLI-007"],
)  # fmt: skip
def summary_as_printed(tmp_path: Path) -> dict[str, Any]:
    """A 2-step pretrain into runs[v1], then the same command with --resume."""
    cli = cli_runner()
    run = fresh_dir(tmp_path, "summary-") / "runs[v1]"
    first, again = cli("pretrain", run, *ARGS), cli("pretrain", run, *ARGS, "--resume")
    out: dict[str, Any] = {"exit_codes_nonzero": (first.exit_code != 0) + (again.exit_code != 0)}
    if out["exit_codes_nonzero"]:
        return out | {"not_canonical": -1, "paths_differing": -1, "losses_differing": -1}
    summaries = [json.loads(r.stdout) for r in (first, again)]
    out["not_canonical"] = sum(r.stdout != json.dumps(s, indent=2, sort_keys=True) + "\n" for r, s in
                               zip((first, again), summaries, strict=True))  # fmt: skip
    checkpoint = str(run / json.loads((run / "latest.json").read_text(encoding="utf-8"))["folder"])
    s = summaries[0]
    out["paths_differing"] = sum(x["out_dir"] != str(run) or x["checkpoint"] != checkpoint for x in summaries)
    records = _records(run)
    steps = [r for r in records if r.get("kind") == "train"]
    step0 = [r["loss"] for r in records if r.get("kind") == "step0"]
    vals = {str(r["step"]): r["val_loss"] for r in records if r.get("kind") == "val"}
    out["losses_differing"] = (
        ([s["step0_loss"]] != step0) + (s["final_loss"] != steps[-1]["loss"]) + (s["val_losses"] != vals)
        + (s["steps_run"] != len(steps)) + (s["start_step"] != 0) + (not vals)
    )  # fmt: skip
    tps = s["tokens_per_s"]
    out["throughput_not_one_decimal"] = not isinstance(tps, float) or round(tps, 1) != tps
    resumed = summaries[1]
    want: dict[str, Any] = {"start_step": 2, "steps_run": 0, "step0_loss": None, "final_loss": None, "val_losses": {}}
    out["resumed_differing"] = sum(resumed[k] != v for k, v in want.items()) + (resumed["tokens_per_s"] != 0.0)
    out["resumed_differing"] += not isinstance(resumed["tokens_per_s"], float)
    return out
