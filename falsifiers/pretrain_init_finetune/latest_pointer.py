"""``latest.json`` is followed only to a complete step folder.

A run writes a step folder atomically and then points ``latest.json`` at it.  A folder can still go
missing afterwards (deleted by hand to free space, a partial copy of the run folder), or lose its
training state.  Resuming from it, or loading it as an adapter, must then stop and say so, not
resume from a folder without its optimizer state or report that no adapter is there.  Here run
folders are laid out by hand: a pointer to a step folder that is missing, one to a folder without
``train_state.json``, one to a complete folder, and no pointer at all.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import torch

from engine.adapters import AdapterError, find_adapter
from engine.config import preset
from engine.data import TokenData
from engine.model import build_model
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig
from engine.train.loop import run_training
from engine.train.state import ResumeError, latest_checkpoint
from engine.train.tasks import PretrainTask
from falsifiers.shared.refusals import Refusal, refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

STEP = "step-000002"


def _run_folder(root: Path, name: str, *, pointer: bool, folder: bool, state: bool) -> Path:
    out = root / name
    out.mkdir(parents=True)
    if pointer:
        (out / "latest.json").write_text(json.dumps({"folder": STEP, "step": 2}), encoding="utf-8")
    if folder:
        (out / STEP).mkdir()
        (out / STEP / "model.safetensors").write_bytes(b"")
    if state:
        (out / STEP / "train_state.json").write_text("{}", encoding="utf-8")
    return out


@checker(observes=["latest", "refusals_differing"], ids=["FALSIFY-PINIT-021"])
def latest_pointer_followed_to_complete_folders(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path
) -> dict[str, Any]:
    """latest_checkpoint on four run folders; --resume into the three it finds nothing in;
    find_adapter on the one whose pointer names a missing folder."""

    root = fresh_dir(tmp_path, "latest-pointer-")
    folders = {
        "no pointer": _run_folder(root, "none", pointer=False, folder=False, state=False),
        "a missing folder": _run_folder(root, "missing", pointer=True, folder=False, state=False),
        "a folder without its state": _run_folder(root, "stateless", pointer=True, folder=True, state=False),
        "a complete folder": _run_folder(root, "complete", pointer=True, folder=True, state=True),
    }
    latest = []
    for what, out in folders.items():
        found = latest_checkpoint(out)
        latest.append([what, "none" if found is None else found.relative_to(out).as_posix()])

    cfg = TrainConfig(steps=4, batch_size=2, seq_len=16, lr=1e-3, warmup_steps=0, save_every=1, seed=0)
    torch.manual_seed(0)
    task = PretrainTask(
        build_model(preset("tiny", vocab_size=engine_tokenizer.vocab_size)), engine_tokenizer, pretrain_data, cfg
    )
    resume = partial(run_training, task, cfg, resume=True)
    pointed = folders["a missing folder"]
    requests: list[Refusal] = [
        (
            partial(resume, folders["no pointer"]),
            ResumeError,
            f"--resume: {folders['no pointer']} holds no complete checkpoint (latest.json missing)",
        ),
        *(
            (
                partial(resume, folders[what]),
                ResumeError,
                f"--resume: {folders[what]} holds no complete checkpoint "
                "(latest.json names a folder without train_state.json)",
            )
            for what in ("a missing folder", "a folder without its state")
        ),
        (partial(find_adapter, pointed), AdapterError, f"{pointed}: latest.json names no checkpoint folder"),
    ]
    return {"latest": latest, "refusals_differing": refusals_differing(requests)}
