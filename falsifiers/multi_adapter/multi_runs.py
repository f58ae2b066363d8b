"""Each adapter of a multi-adapter run, against the one-adapter run of the same data and settings.

``finetune BASE --adapters D1:A --adapters D2:B`` trains every adapter on one shared base; each
adapter has its own data, optimizer, schedule and seed, so what it writes must be what
``finetune BASE A --data D1`` writes with the same settings (whose files FALSIFY-TCLI-005 holds to
PEFT and the settings): the adapter's weights and config, every log record but the run's timing
and paths, and its step folders' manifest and training state; the multi-adapter run adds only the
adapter's name.  The one-adapter run is the reference, run here through the same command line.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import torch

from falsifiers.shared.cli import cli_runner
from falsifiers.shared.inspect_reports import _tensors
from falsifiers.shared.training import _rows
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

STEPS, EVAL_EVERY = 4, 2
SETTINGS = (
    "--steps", str(STEPS), "--save-every", "2", "--eval-every", str(EVAL_EVERY), "--lr", "1e-2", "--rank", "4",
    "--batch-size", "2", "--seq-len", "32", "--warmup", "1", "--grad-clip", "0",
)  # fmt: skip
# only the multi-adapter run's files carry the adapter's name; timing is the run's own
ONLY_MULTI = {"adapter"}
NOT_COMPARED = {"elapsed_s"}


def _log(folder: Path) -> list[dict[str, Any]]:
    """The run's log records, a checkpoint's path relative to the run folder, timing left out."""
    records = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
    for r in records:
        if isinstance(r.get("path"), str):
            r["path"] = os.path.relpath(r["path"], folder)
    return [{k: v for k, v in r.items() if k not in NOT_COMPARED} for r in records]


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _same_tensors(a: Path, b: Path, skip: tuple[str, ...] = ()) -> bool:
    ta, tb = _tensors(a), _tensors(b)
    return ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta if not k.startswith(skip))


def _differences(multi: Path, single: Path, name: str, first_val: bool = False) -> list[str]:
    """What ``multi`` (one adapter of a multi-adapter run) holds otherwise than ``single``; with
    ``first_val`` (lowest_val_first) its log must also open with the untrained adapter's validation."""
    out: list[str] = []
    records = _log(multi)
    if first_val:
        opening = [i for i, r in enumerate(records) if r.get("kind") == "val" and r.get("step") == 0]
        value = records[opening[0]].get("val_loss") if len(opening) == 1 else None
        if not (isinstance(value, float) and math.isfinite(value)):
            out.append("log.jsonl: no step-0 validation")
        records = [r for i, r in enumerate(records) if i not in opening]
    if records != _log(single):
        out.append("log.jsonl")
    steps = sorted(p.name for p in single.glob("step-*"))
    if sorted(p.name for p in multi.glob("step-*")) != steps or _json(multi / "latest.json") != _json(
        single / "latest.json"
    ):
        out.append("step folders")
    for step in steps:
        m, s = multi / step, single / step
        if not _same_tensors(m / "adapter" / "adapter_model.safetensors", s / "adapter" / "adapter_model.safetensors"):
            out.append(f"{step}/adapter weights")
        if _json(m / "adapter" / "adapter_config.json") != _json(s / "adapter" / "adapter_config.json"):
            out.append(f"{step}/adapter_config.json")
        manifest = _json(m / "manifest.json")
        if manifest.get("adapter") != name or {k: v for k, v in manifest.items() if k not in ONLY_MULTI} != _json(
            s / "manifest.json"
        ):
            out.append(f"{step}/manifest.json")
        state, want = _json(m / "train_state.json"), _json(s / "train_state.json")
        # the optimizer's parameter names carry the adapter's name where a one-adapter run's say "default"
        names = [n.replace(f".{name}.", ".default.") for n in state.pop("param_names", [])]
        if state.pop("adapter", None) != name or state.pop("data_digest", None) != manifest.get("data_digest"):
            out.append(f"{step}/train_state.json adapter")
        if names != want.pop("param_names", None) or state != want:
            out.append(f"{step}/train_state.json")
        # rng.*: the process's generator state, which the adapters of one run share and draw from in
        # turn (a multi-adapter run is never resumed, so nothing reads it back)
        if not _same_tensors(m / "train_state.safetensors", s / "train_state.safetensors", skip=("rng.",)):
            out.append(f"{step}/train_state.safetensors")
    return out


def _expected_order(schedule: str, folders: dict[str, Path], steps: int, eval_every: int) -> list[str]:
    """The order of steps the schedule's rule gives: round robin and synchronized take the adapters
    in turn; lowest_val_first steps the unfinished adapter whose latest validation loss (from its
    log) is lowest, ties by name."""
    names = list(folders)
    if schedule != "lowest_val_first":
        return names * steps
    vals = {n: {r["step"]: r["val_loss"] for r in _log(f) if r.get("kind") == "val"} for n, f in folders.items()}
    done, latest, order = dict.fromkeys(names, 0), {n: vals[n].get(0, math.inf) for n in names}, []
    while any(d < steps for d in done.values()):
        pick = min((n for n in names if done[n] < steps), key=lambda n: (latest[n], n))
        order.append(pick)
        done[pick] += 1
        if done[pick] % eval_every == 0 or done[pick] == steps:
            latest[pick] = vals[pick].get(done[pick], math.nan)
    return order


@checker(
    observes=["runs", "adapters_compared", "differing", "differences", "orders_differing"],
    ids=["FALSIFY-MULTI-005"],
)
def adapters_as_one_adapter_runs(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """Two adapters trained together (round robin, synchronized, lowest validation loss first, and
    QLoRA round robin) and each alone, through the command line; every file of each adapter's run
    folder compared."""
    run = cli_runner()
    work = fresh_dir(tmp_path, "multi-runs-")
    data = {}
    for name, shift in (("a", 0), ("b", 3)):
        data[name] = work / f"{name}.jsonl"
        data[name].write_text("".join(json.dumps(r) + "\n" for r in _rows(shift)), encoding="utf-8")
    for name, path in data.items():
        single = run("finetune", pretrained_init, work / "single" / name, "--data", path, *SETTINGS)
        if single.exit_code != 0:
            raise RuntimeError(f"finetune exited {single.exit_code}: {single.output}")
    out: dict[str, Any] = {"runs": 0, "adapters_compared": 0, "differences": [], "orders_differing": 0}
    # QLoRA without double quantization: both runs quantize the base themselves, as asked
    qlora = ("--method", "qlora", "--no-double-quant")
    for name, path in data.items():
        single = run("finetune", pretrained_init, work / "single-qlora" / name, "--data", path, *qlora, *SETTINGS)
        if single.exit_code != 0:
            raise RuntimeError(f"finetune exited {single.exit_code}: {single.output}")
    for schedule in ("round_robin", "synchronized", "lowest_val_first", "qlora"):
        specs = [a for name, path in data.items() for a in ("--adapters", f"{path}:{work / schedule / name}")]
        flags = ("--schedule", schedule) if schedule != "qlora" else ("--schedule", "round_robin", *qlora)
        multi = run("finetune", pretrained_init, *specs, *flags, *SETTINGS)
        out["runs"] += 1
        if multi.exit_code != 0:
            out["differences"].append(f"{schedule}: exit {multi.exit_code}")
            continue
        folders = {name: work / schedule / name for name in data}
        order = json.loads(multi.stdout).get("order")
        rule = "round_robin" if schedule == "qlora" else schedule
        out["orders_differing"] += order != _expected_order(rule, folders, STEPS, EVAL_EVERY)
        for name in data:
            out["adapters_compared"] += 1
            single_run = work / ("single-qlora" if schedule == "qlora" else "single") / name
            found = _differences(work / schedule / name, single_run, name, schedule == "lowest_val_first")
            out["differences"] += [f"{schedule}/{name}: {d}" for d in found]
    out["differing"] = len(out["differences"])
    return out
