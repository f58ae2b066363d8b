"""``--resume`` continues a stopped run; it neither restarts it nor changes what it writes.

Each training command runs 3 steps with a checkpoint every 2 (the uninterrupted run).  A copy of its
folder is then cut back to what a run stopped after its step-2 checkpoint leaves (no step-3 folder,
latest.json at step 2, the log up to that checkpoint's record) and resumed with the same command
and ``--resume``.  A restart from step 0 would end with the same weights (every run is seeded), so
the weights alone cannot tell the two apart: the resumed run's log must be the uninterrupted run's
with one start record (step 2, resume true) where it resumed, every file of its step-3 folder
(weights, optimizer moments, scheduler, RNG state, manifest) the uninterrupted run's, and its
summary the uninterrupted run's for the steps after step 2 (start step 2, one step run, no step-0
loss, the validation losses after step 2), timing and the run folder's path aside.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import _rows
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

STEPS = 3
COMMON = ("--steps", str(STEPS), "--save-every", "2", "--eval-every", "2", "--warmup", "1", "--seq-len", "32")
TIMING = {"elapsed_s"}  # log fields that time the run
RATES = {"tokens_per_s"}  # summary fields that do


def _records(log: Path, folder: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        r = {k: v for k, v in json.loads(line).items() if k not in TIMING}
        if isinstance(r.get("path"), str):
            r["path"] = str(Path(r["path"]).relative_to(folder))
        out.append(r)
    return out


def _cut_back(run: Path, copy: Path) -> None:
    """``copy``: ``run`` as a run stopped right after its step-2 checkpoint leaves it."""
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns(f"step-{STEPS:06d}"))
    lines = (run / "log.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = []
    for line in lines:
        kept.append(line)
        r = json.loads(line)
        if r.get("kind") == "checkpoint" and r.get("step") == 2:
            break
    # the stopped run wrote its own folder's paths
    (copy / "log.jsonl").write_text("".join(kept).replace(str(run), str(copy)), encoding="utf-8")
    (copy / "latest.json").write_text(json.dumps({"folder": "step-000002", "step": 2}), encoding="utf-8")


def _tensors(path: Path) -> dict[str, torch.Tensor]:

    return load_file(str(path))


def _files_differing(a: Path, b: Path) -> list[str]:
    """Relative paths of the files under ``a`` and ``b`` that differ (tensors bit for bit, JSON by value)."""
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()} | {p.relative_to(b) for p in b.rglob("*")
                                                                               if p.is_file()})  # fmt: skip
    out = []
    for name in names:
        fa, fb = a / name, b / name
        if not (fa.is_file() and fb.is_file()):
            out.append(str(name))
        elif name.suffix == ".safetensors":
            ta, tb = _tensors(fa), _tensors(fb)
            if ta.keys() != tb.keys() or any(
                ta[k].dtype != tb[k].dtype or not torch.equal(ta[k], tb[k]) for k in ta
            ):  # fmt: skip
                out.append(str(name))
        elif name.suffix == ".json":
            if json.loads(fa.read_text()) != json.loads(fb.read_text()):
                out.append(str(name))
        elif fa.read_bytes() != fb.read_bytes():
            out.append(str(name))
    return out


@checker(
    observes=["commands", "resumed", "log_mismatches", "files_compared", "files_differing", "summary_mismatches"],
    ids=["FALSIFY-TCLI-006"],
)
def resume_continues_the_run(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """pretrain, finetune (LoRA, full, QLoRA) and distill: uninterrupted, and stopped at step 2 and resumed."""
    run = cli_runner()
    work = fresh_dir(tmp_path, "resume-")
    data = work / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(0)), encoding="utf-8")
    small = ("--batch-size", "2", "--lr", "1e-2")
    commands: dict[str, tuple[Any, ...]] = {
        "pretrain": ("pretrain", "{out}", "--preset", "tiny", "--batch-size", "4", "--lr", "3e-3"),
        "finetune-lora": ("finetune", pretrained_init, "{out}", "--data", data, "--rank", "4", *small),
        "finetune-full": ("finetune", pretrained_init, "{out}", "--data", data, "--method", "full", *small),
        "finetune-qlora": (
            "finetune",
            pretrained_init,
            "{out}",
            "--data",
            data,
            "--method",
            "qlora",
            "--rank",
            "4",
            *small,
        ),
        "distill": ("distill", pretrained_init, "{out}", "--student-preset", "tiny", *small),
    }
    out: dict[str, Any] = {"commands": 0, "resumed": 0, "log_mismatches": 0, "files_compared": 0}
    out |= {"files_differing": [], "summary_mismatches": 0}
    for name, template in commands.items():
        whole, stopped = work / name / "whole", work / name / "resumed"

        def argv(folder: Path, template: tuple[Any, ...] = template) -> list[Any]:
            return [folder if a == "{out}" else a for a in template] + list(COMMON)

        first = run(*argv(whole))
        out["commands"] += 1
        if first.exit_code != 0:
            raise RuntimeError(f"{name} exited {first.exit_code}: {first.output}")
        _cut_back(whole, stopped)
        again = run(*argv(stopped), "--resume")
        if again.exit_code != 0:
            out["files_differing"].append(f"{name}: resume exited {again.exit_code}")
            continue
        out["resumed"] += 1
        want = _records(whole / "log.jsonl", whole)
        cut = next(i for i, r in enumerate(want) if r.get("kind") == "checkpoint" and r.get("step") == 2) + 1
        start = {**next(r for r in want if r.get("kind") == "start"), "step": 2, "resume": True}
        out["log_mismatches"] += _records(stopped / "log.jsonl", stopped) != [*want[:cut], start, *want[cut:]]
        for folder in (f"step-{STEPS:06d}",):
            out["files_compared"] += sum(1 for p in (whole / folder).rglob("*") if p.is_file())
            out["files_differing"] += [f"{name}/{d}" for d in _files_differing(whole / folder, stopped / folder)]
        if json.loads((whole / "latest.json").read_text()) != json.loads((stopped / "latest.json").read_text()):
            out["files_differing"].append(f"{name}/latest.json")
        # the resumed process ran the steps after the checkpoint: its summary is the uninterrupted
        # run's for those steps (the same end), and says where it started
        summary = json.loads(first.stdout.replace(str(whole), "{out}"))
        expected = {k: v for k, v in summary.items() if k not in RATES}
        expected |= {"start_step": 2, "steps_run": STEPS - 2, "step0_loss": None}
        expected["val_losses"] = {k: v for k, v in summary["val_losses"].items() if int(k) > 2}
        resumed = json.loads(again.stdout.replace(str(stopped), "{out}"))
        out["summary_mismatches"] += {k: v for k, v in resumed.items() if k not in RATES} != expected
    return out
