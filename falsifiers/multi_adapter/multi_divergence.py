"""A multi-adapter run whose adapter diverges stops as that adapter's one-adapter run stops.

With an unclipped learning rate of 1e36 a rank-4 LoRA adapter's loss turns NaN within a few steps
(the adapter's matrices overflow float32).  ``finetune --adapters`` with two such adapters, round
robin, must stop at the first non-finite loss of whichever adapter reaches one first exactly as
``finetune --data`` of that adapter alone does: exit 3, an error naming the adapter, the step, the
value and the last checkpoint kept, and a log whose every record (the stop's included, its
checkpoint path relative to the run folder) is the one-adapter run's.  The other adapter's log
holds what its own one-adapter run logged up to that point, and every step folder is a checkpoint
its adapter's log records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from falsifiers.multi_adapter.multi_runs import _log
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import _rows
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SETTINGS = (
    "--steps", "6", "--save-every", "1", "--grad-clip", "0", "--lr", "1e36", "--rank", "4", "--batch-size", "2",
    "--seq-len", "32", "--warmup", "0",
)  # fmt: skip
STOP = re.compile(r"step (\d+): .* is nan; training stopped before the update \(last good checkpoint kept at (\S+)\)")


def _stop(output: str) -> tuple[int, str] | None:
    found = STOP.search(" ".join(output.split()))
    return (int(found[1]), found[2]) if found else None


def _stop_log(folder: Path) -> list[dict[str, Any]]:
    """The run's log as ``_log`` reads it, the stop's last checkpoint relative to the run folder too."""
    records = _log(folder)
    for r in records:
        if isinstance(r.get("last_checkpoint"), str):
            r["last_checkpoint"] = str(Path(r["last_checkpoint"]).relative_to(folder))
    return records


@checker(
    observes=["exit_codes", "stops_named", "stopped_logs_differing", "other_logs_differing", "folders_unlogged"],
    ids=["FALSIFY-MULTI-007"],
)
def divergence_stops_as_one_adapter(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """Two adapters diverging together and each alone; the stop, the logs and the folders compared."""
    run = cli_runner()
    work = fresh_dir(tmp_path, "multi-diverge-")
    data: dict[str, Path] = {}
    single: dict[str, Any] = {}
    for name, shift in (("a", 0), ("b", 3)):
        data[name] = work / f"{name}.jsonl"
        data[name].write_text("".join(json.dumps(r) + "\n" for r in _rows(shift)), encoding="utf-8")
        single[name] = run("finetune", pretrained_init, work / "single" / name, "--data", data[name], *SETTINGS)
    specs = [a for name, path in data.items() for a in ("--adapters", f"{path}:{work / 'multi' / name}")]
    multi = run("finetune", pretrained_init, *specs, *SETTINGS)
    out: dict[str, Any] = {"exit_codes": [single["a"].exit_code, single["b"].exit_code, multi.exit_code]}
    named = re.search(r"adapter '(\w+)'", multi.output)
    first = named[1] if named else "?"
    stop_single = _stop(single[first].output) if first in single else None
    stop_multi = _stop(multi.output)
    out["stops_named"] = int(
        stop_single is not None
        and stop_multi is not None
        and stop_multi[0] == stop_single[0]
        and Path(stop_multi[1]) == work / "multi" / first / Path(stop_single[1]).name
    )
    out["stopped_logs_differing"] = int(
        first not in single or _stop_log(work / "multi" / first) != _stop_log(work / "single" / first)
    )
    out["other_logs_differing"] = 0
    out["folders_unlogged"] = 0
    for name in data:
        logged = _log(work / "multi" / name)
        if name != first:
            out["other_logs_differing"] += int(not logged or logged != _log(work / "single" / name)[: len(logged)])
        # every step folder is a checkpoint its log records, and no folder follows the stop
        saved = {r["path"] for r in logged if r.get("kind") == "checkpoint"}
        out["folders_unlogged"] += sum(p.name not in saved for p in (work / "multi" / name).glob("step-*"))
    return out
