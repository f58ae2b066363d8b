"""What one rank of a ``torchrun`` job does with its run folder and its task: read in this process.

FALSIFY-DDP-001 runs two real ranks in child processes and reads what rank 0 wrote; what a
rank other than 0 returns, and the task it leaves behind, never come back from a child.  Here
``engine.train.run_training`` runs in this process as rank 0 and as rank 1 of 2, with
torch.distributed's calls and DistributedDataParallel replaced by stand-ins (``all_reduce`` adds an
identical second rank; no process group is made): rank 1 writes nothing and emits no record,
both return the checkpoint folder rank 0 writes, both wait at a barrier after each checkpoint,
and each task gets its whole data set back.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import torch.distributed as dist
import torch.nn.parallel

from engine.checkpoint import load_checkpoint
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig, run_training
from engine.train.tasks import PretrainTask
from falsifiers.shared.training import own_streams
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


class _Group:
    """torch.distributed as one rank of two sees it, with an identical second rank."""

    def __init__(self) -> None:
        self.initialized = False
        self.barriers = 0
        self.destroyed = 0

    def is_initialized(self) -> bool:
        return self.initialized

    def init_process_group(self, **kwargs: Any) -> None:
        self.initialized = True

    def all_reduce(self, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        tensor.mul_(2)

    def barrier(self, *args: Any, **kwargs: Any) -> None:
        self.barriers += 1

    def destroy_process_group(self) -> None:
        self.initialized, self.destroyed = False, self.destroyed + 1


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


OBSERVED = ["written", "records", "checkpoints", "data_back", "barriers", "destroyed"]


@checker(observes=OBSERVED, ids=["FALSIFY-DDP-007"])
def each_rank_its_part(pretrained_init: Path, engine_tokenizer: EngineTokenizer, tmp_path: Path) -> dict[str, Any]:
    """A 2-step pretraining of the session's init, a checkpoint after each step, as rank 0 and as
    rank 1 of 2 of a torchrun job stood in for in this process."""
    work = fresh_dir(tmp_path, "rank-run-")
    data = own_streams(engine_tokenizer, work)
    cfg = TrainConfig(steps=2, batch_size=4, seq_len=16, eval_every=0, save_every=1, eval_batches=1, seed=0)
    out: dict[str, list[Any]] = {k: [] for k in OBSERVED}
    for rank in (0, 1):
        group = _Group()
        folder = work / f"rank-{rank}"
        records: list[dict[str, Any]] = []
        task = PretrainTask(load_checkpoint(pretrained_init).model, engine_tokenizer, data, cfg)
        environ = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        environ.update({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)})
        with ExitStack() as stack:
            stack.enter_context(mock.patch.dict(os.environ, environ, clear=True))
            stack.enter_context(mock.patch.object(dist, "is_available", lambda: True))
            for name in ("is_initialized", "init_process_group", "all_reduce", "barrier", "destroy_process_group"):
                stack.enter_context(mock.patch.object(dist, name, getattr(group, name)))
            stack.enter_context(
                mock.patch.object(torch.nn.parallel, "DistributedDataParallel", lambda model, **kwargs: model)
            )
            result = run_training(task, cfg, folder, on_record=records.append)
        written = _files(folder)
        out["written"].append(sorted({w.split("/")[0] for w in written}))
        out["records"].append([r["kind"] for r in records])
        checkpoint = result.checkpoint
        out["checkpoints"].append(str(checkpoint.relative_to(folder)) if checkpoint is not None else "none")
        out["data_back"].append(task.data is data)
        out["barriers"].append(group.barriers)
        out["destroyed"].append(group.destroyed)
    return out
