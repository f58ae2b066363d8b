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
from pathlib import Path
from typing import Any

import torch

from falsifiers._cli import cli_runner
from falsifiers._workdir import fresh_dir
from falsifiers.train_cli import _tensors
from pv.checkers import checker

SETTINGS = (
    "--steps", "4", "--save-every", "2", "--eval-every", "2", "--lr", "1e-2", "--rank", "4",
    "--batch-size", "2", "--seq-len", "32", "--warmup", "1", "--grad-clip", "0",
)  # fmt: skip
WORDS = ("yes", "no", "maybe", "later", "now", "never", "soon", "again", "twice", "often")
# only the multi-adapter run's files carry the adapter's name; timing and paths are the run's own
ONLY_MULTI = {"adapter"}
NOT_COMPARED = {"elapsed_s", "path"}


def _rows(shift: int) -> list[dict[str, str]]:
    """120 instruction pairs (12 validation rows: more batches than eval_batches' 4)."""
    return [
        {"prompt": f"say {WORDS[(i + shift) % len(WORDS)]} {i}", "response": f"return '{WORDS[i % len(WORDS)]}'"}
        for i in range(120)
    ]


def _log(folder: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in NOT_COMPARED} for r in records]


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _same_tensors(a: Path, b: Path, skip: tuple[str, ...] = ()) -> bool:
    ta, tb = _tensors(a), _tensors(b)
    return ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta if not k.startswith(skip))


def _differences(multi: Path, single: Path, name: str) -> list[str]:
    """What ``multi`` (one adapter of a multi-adapter run) holds otherwise than ``single``."""
    out: list[str] = []
    if _log(multi) != _log(single):
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


@checker(observes=["runs", "adapters_compared", "differing", "differences"], ids=["FALSIFY-MULTI-005"])
def adapters_as_one_adapter_runs(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """Two adapters trained together (round robin, then synchronized) and each alone, through the
    command line; every file of each adapter's run folder compared."""
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
    out: dict[str, Any] = {"runs": 0, "adapters_compared": 0, "differences": []}
    for schedule in ("round_robin", "synchronized"):
        specs = [a for name, path in data.items() for a in ("--adapters", f"{path}:{work / schedule / name}")]
        multi = run("finetune", pretrained_init, *specs, "--schedule", schedule, *SETTINGS)
        out["runs"] += 1
        if multi.exit_code != 0:
            out["differences"].append(f"{schedule}: exit {multi.exit_code}")
            continue
        for name in data:
            out["adapters_compared"] += 1
            found = _differences(work / schedule / name, work / "single" / name, name)
            out["differences"] += [f"{schedule}/{name}: {d}" for d in found]
    out["differing"] = len(out["differences"])
    return out
