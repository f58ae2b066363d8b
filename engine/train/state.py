"""Training state on disk: optimizer moments and RNG states (safetensors), the scheduler, step and
data position (JSON), the newest-checkpoint pointer and the JSONL log.  Nothing is pickled, and
every file is written atomically, so a run killed at any point resumes from its last folder."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from engine.atomic import write_atomic
from engine.errors import EngineError
from engine.faults import FAULTS

LOG_NAME = "log.jsonl"
LATEST_NAME = "latest.json"
STATE_TENSORS = "train_state.safetensors"
STATE_JSON = "train_state.json"


class ResumeError(EngineError, ValueError):
    """A checkpoint folder that cannot continue this run."""


def state_to_files(
    optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LambdaLR, names: list[str]
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    # AdamW, the one optimizer make_optimizer builds, keeps every state entry (step included) as a tensor
    for idx, entry in sd["state"].items():
        for key, value in entry.items():
            tensors[f"optim.{idx}.{key}"] = value.detach().to("cpu").contiguous()
    tensors["rng.cpu"] = torch.get_rng_state()
    # one state per visible GPU: none without CUDA (torch lists none, and initialises nothing)
    for i, s in enumerate(torch.cuda.get_rng_state_all()):
        tensors[f"rng.cuda.{i}"] = s
    meta = {
        "param_names": names,
        "param_groups": sd["param_groups"],
        "scheduler": scheduler.state_dict(),
    }
    return tensors, meta


def state_from_files(
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LambdaLR,
    names: list[str],
    tensors: Mapping[str, torch.Tensor],
    meta: Mapping[str, Any],
) -> None:
    mismatch = list(meta["param_names"]) != names
    if FAULTS.active("resume_param_names_unchecked"):  # the defect: state loaded by position, unchecked
        mismatch = False  # pragma: no mutate
    if mismatch:
        theirs, ours = set(meta["param_names"]), set(names)
        raise ResumeError(
            "the checkpoint trained a different parameter set: "
            f"only in checkpoint {sorted(theirs - ours)[:3]}, only in this run {sorted(ours - theirs)[:3]}"
        )
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, idx, name = key.split(".")  # optim.{index}.{name}: no state name holds a dot
            # load_state_dict moves each moment to its parameter's device and dtype (torch's own rule)
            state.setdefault(int(idx), {})[name] = value
    # betas come back a JSON list; AdamW reads them by index as it reads the tuple
    optimizer.load_state_dict({"state": state, "param_groups": [dict(g) for g in meta["param_groups"]]})
    scheduler.load_state_dict(dict(meta["scheduler"]))
    rng = tensors["rng.cpu"]
    if FAULTS.active("resume_rng_not_restored"):  # the defect: the resuming process's own generator goes on
        rng = torch.get_rng_state()  # pragma: no mutate
    torch.set_rng_state(rng)
    # by GPU index as a number (rng.cuda.10 after rng.cuda.9), as many as this machine has GPUs: a
    # run saved on GPUs resumes on the CPU without them
    saved = {int(k.removeprefix("rng.cuda.")): v for k, v in tensors.items() if k.startswith("rng.cuda.")}
    order = sorted(saved)
    if FAULTS.active("resume_gpu_states_in_text_order"):  # the defect: rng.cuda.10 goes to GPU 2
        order = sorted(saved, key=str)  # pragma: no mutate
    torch.cuda.set_rng_state_all([saved[i] for i in order][: torch.cuda.device_count()])


def latest_checkpoint(out_dir: str | os.PathLike[str]) -> Path | None:
    pointer = Path(out_dir) / LATEST_NAME
    if not pointer.is_file():
        return None
    folder = Path(out_dir) / json.loads(pointer.read_text())["folder"]
    if FAULTS.active("latest_pointer_trusted"):  # pragma: no mutate
        return folder  # pragma: no mutate -- the defect: a step folder half deleted or never finished is resumed
    return folder if (folder / STATE_JSON).is_file() else None


def write_json_atomic(path: Path, data: Any) -> None:
    sort = True
    # the defect: keys in the order they were inserted, so two runs' files differ by their history
    if FAULTS.active("run_json_keys_unsorted"):  # pragma: no mutate
        sort = False  # pragma: no mutate
    write_atomic(path, json.dumps(data, indent=2, sort_keys=sort) + "\n")


class JsonlLog:
    def __init__(self, path: Path, *, append: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        if FAULTS.active("resumed_log_truncated"):  # the defect: a resume starts the log afresh
            append = False  # pragma: no mutate
        self._fh = open(path, "ab" if append else "wb")  # noqa: SIM115 (closed by close())

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write((json.dumps(record, sort_keys=True) + "\n").encode())
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
