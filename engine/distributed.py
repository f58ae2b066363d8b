"""Data-parallel training through ``torch.distributed`` (DDP), launched by ``torchrun``.

Nothing here starts processes: ``torchrun --nproc_per_node=N`` does, and sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` in each.  Without those
variables (or with ``WORLD_SIZE=1``) every helper is a no-op, so the training loop is unchanged
outside ``torchrun``.

The pieces the training loop uses:

- :func:`setup` joins the process group that ``torchrun`` describes: gloo on CPU, NCCL on CUDA
  (one device per local rank, :func:`rank_device`).  A group that is already up (a falsifier run
  by ``pv.launch``) is reused and left up.
- :class:`ShardedData` gives each rank every ``world_size``-th row of the global batch
  (``DistributedSampler``'s interleaving), so across ranks a step covers the same examples as one
  process with the same ``batch_size``, and every example is seen once per epoch.
- :meth:`DistContext.global_loss` rescales each rank's mean loss by its share of the tokens, so
  that DDP's gradient *average* equals the gradient of the global per-token mean even when ranks
  hold different numbers of unmasked tokens (fine-tuning masks prompts and padding).
- :meth:`DistContext.forward_through` routes the task's forward through the
  ``DistributedDataParallel`` wrapper (that is what registers the gradient all-reduce) while
  checkpoints keep the bare module's parameter names.
- Only rank 0 writes (:attr:`DistContext.is_main`); :meth:`DistContext.barrier` makes the others
  wait for a checkpoint to exist before they go on.

Imports inside functions: torch.nn.parallel only where a model is wrapped for a data-parallel run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from engine.errors import EngineError
from engine.faults import FAULTS

ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


class DistributedError(EngineError, RuntimeError):
    """A data-parallel run that cannot be set up as asked."""


@dataclass(frozen=True)
class RankInfo:
    """This process's place in a ``torchrun`` job (rank 0 of 1 outside one)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def rank_info(environ: Mapping[str, str] | None = None) -> RankInfo:
    """Read ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``; missing variables mean a single process."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env:
        return RankInfo()
    try:
        world = int(env["WORLD_SIZE"])
        rank = int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError as exc:
        raise DistributedError(f"torchrun variables are not integers: {exc}") from None
    if world < 1 or not 0 <= rank < world or local < 0:
        raise DistributedError(f"inconsistent torchrun variables: RANK={rank} WORLD_SIZE={world} LOCAL_RANK={local}")
    return RankInfo(rank, world, local)


def backend_for(device: torch.device) -> str:
    """NCCL for CUDA tensors, gloo for everything else."""
    if FAULTS.active("ddp_gloo_on_cuda"):  # the defect: gloo everywhere, so CUDA all-reduces go through the host
        return "gloo"  # pragma: no mutate
    return "nccl" if device.type == "cuda" else "gloo"


def rank_device(device: torch.device, info: RankInfo | None = None) -> torch.device:
    """Under ``torchrun`` a bare ``cuda`` means this rank's own GPU, ``cuda:LOCAL_RANK``.

    An explicit index is kept (the caller pinned the device); CPU is shared by every rank.
    """
    info = info or rank_info()
    if device.type != "cuda" or not info.distributed or device.index is not None:
        return device
    if FAULTS.active("ddp_ranks_share_first_gpu"):  # pragma: no mutate
        return device  # pragma: no mutate -- the defect: every rank computes on the current GPU, cuda:0
    count = torch.cuda.device_count()
    if info.local_rank >= count:
        raise DistributedError(
            f"local rank {info.local_rank} has no GPU of its own: {count} visible; "
            "use --nproc_per_node <= the number of GPUs or --device cpu"
        )
    torch.cuda.set_device(info.local_rank)
    return torch.device("cuda", info.local_rank)


@dataclass
class DistContext:
    """The process group a training run belongs to, and what the loop does differently in it."""

    info: RankInfo = field(default_factory=RankInfo)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    owns_group: bool = False  # True when setup() created the group (and close() destroys it)

    @property
    def rank(self) -> int:
        return self.info.rank

    @property
    def world_size(self) -> int:
        return self.info.world_size

    @property
    def active(self) -> bool:
        return self.info.distributed

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that writes checkpoints, logs and progress."""
        return self.info.rank == 0

    def barrier(self) -> None:
        if self.active:
            if self.device.type == "cuda":
                dist.barrier(device_ids=[self.device.index or 0])
            else:
                dist.barrier()

    def close(self) -> None:
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()
        elif FAULTS.active("ddp_close_destroys_foreign_group") and dist.is_initialized():  # pragma: no mutate
            dist.destroy_process_group()  # pragma: no mutate -- the defect: a group the caller made is torn down
        self.owns_group = False

    def wrap(self, model: nn.Module) -> nn.Module:
        """``model`` inside ``DistributedDataParallel`` (which broadcasts rank 0's weights)."""
        if not self.active:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index or 0] if self.device.type == "cuda" else None
        # The only buffers are the RoPE tables, which every rank builds from the config alike
        # (and grows inside forward): broadcasting them each step would be wasted traffic.
        return DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)

    @contextmanager
    def forward_through(self, task: Any, wrapped: nn.Module) -> Iterator[None]:
        """Let ``task.loss`` call ``wrapped`` (the DDP module) instead of the bare model."""
        if wrapped is task.model:
            yield
            return
        bare = task.model
        task.model = wrapped
        try:
            yield
        finally:
            task.model = bare

    def global_loss(self, loss: torch.Tensor, tokens: int) -> tuple[torch.Tensor, float, int]:
        """(loss to backpropagate, global mean loss as a float, global token count).

        Each rank's ``loss`` is a mean over its own ``tokens``.  Scaled by
        ``tokens * world_size / global_tokens`` it makes DDP's averaged gradient the gradient of
        ``sum(loss_r * tokens_r) / global_tokens``: the loss one process would compute on the
        whole global batch.  The float value is that global loss, the same on every rank, so a
        NaN stops every rank at the same step.
        """
        if not self.active:
            return loss, float(loss.detach()), tokens
        stats = torch.tensor([float(loss.detach()) * tokens, float(tokens)], dtype=torch.float64, device=self.device)
        dist.all_reduce(stats)
        total_tokens = int(stats[1].item())
        if total_tokens <= 0:
            raise DistributedError("no rank has a token to learn from in this batch")
        scaled = loss * (tokens * self.world_size / total_tokens)
        if FAULTS.active("ddp_loss_unweighted"):
            scaled = loss  # the defect: DDP then averages the ranks' means  # pragma: no mutate
        return scaled, float(stats[0].item()) / total_tokens, total_tokens


def setup(device: torch.device, environ: Mapping[str, str] | None = None) -> DistContext:
    """Join the ``torchrun`` process group for a run on ``device`` (no-op outside ``torchrun``)."""
    info = rank_info(environ)
    if not info.distributed:
        return DistContext(info, device)
    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed")
    if dist.is_initialized():
        if dist.get_world_size() != info.world_size or dist.get_rank() != info.rank:
            raise DistributedError(
                f"the process group (rank {dist.get_rank()} of {dist.get_world_size()}) does not match "
                f"RANK={info.rank} WORLD_SIZE={info.world_size}"
            )
        if FAULTS.active("ddp_setup_adopts_group_as_own"):  # pragma: no mutate
            return DistContext(info, device, owns_group=True)  # pragma: no mutate -- the defect: close destroys it
        return DistContext(info, device, owns_group=False)
    backend = backend_for(device)
    if backend == "nccl" and not dist.is_nccl_available():
        raise DistributedError("CUDA training under torchrun needs NCCL, which this torch build lacks")
    # env:// reads MASTER_ADDR/MASTER_PORT that torchrun set.
    kwargs: dict[str, Any] = {"backend": backend, "rank": info.rank, "world_size": info.world_size}
    if backend == "nccl":
        kwargs["device_id"] = device
    dist.init_process_group(**kwargs)
    return DistContext(info, device, owns_group=True)


class ShardedData:
    """A view of a training data set that yields only this rank's rows of each global batch.

    ``batch(step, batch_size, ...)`` still takes the *global* batch size; rank ``r`` of ``W`` gets
    rows ``r, r + W, r + 2W, ...``.  Everything else (``val_batches``, ``digest``) is the
    underlying data set's, so validation and checkpoint manifests are the same on every rank.
    """

    def __init__(self, data: Any, rank: int, world_size: int) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside a world of {world_size}")
        self.data, self.rank, self.world_size = data, rank, world_size

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not found on the view itself: delegate to the data set.
        return getattr(self.__dict__["data"], name)

    def batch(self, step: int, batch_size: int, *args: Any, **kwargs: Any) -> Any:
        if batch_size % self.world_size:
            raise DistributedError(
                f"the global batch size {batch_size} does not split over {self.world_size} processes; "
                f"use a multiple of {self.world_size}"
            )
        full = self.data.batch(step, batch_size, *args, **kwargs)
        return shard_rows(full, self.rank, self.world_size)


def shard_rows(batch: Any, rank: int, world_size: int) -> Any:
    """Rows ``rank::world_size`` of a tensor, or of each tensor in a tuple (ids, labels)."""
    if FAULTS.active("shard_rank_ignored"):  # the defect: every rank trains on rank 0's rows
        rank = 0  # pragma: no mutate
    if isinstance(batch, torch.Tensor):
        return batch[rank::world_size]
    if isinstance(batch, tuple):
        return tuple(shard_rows(b, rank, world_size) for b in batch)
    raise TypeError(f"cannot shard a batch of type {type(batch).__name__}")


def shard_task(task: Any, ctx: DistContext) -> Any:
    """Put a :class:`ShardedData` view on ``task.data``; returns the data set to restore later."""
    original = getattr(task, "data", None)
    if not ctx.active:
        return original
    if original is None or not hasattr(original, "batch"):
        raise DistributedError(
            f"{type(task).__name__} has no `data` with a `batch` method, so it cannot be sharded over ranks"
        )
    task.data = ShardedData(original, ctx.rank, ctx.world_size)
    return original


def unshard_task(task: Any, original: Any, ctx: DistContext) -> None:
    """Undo :func:`shard_task`: the task keeps its whole data set after the run."""
    if FAULTS.active("ddp_task_keeps_shard_view"):  # pragma: no mutate
        return  # pragma: no mutate -- the defect: after the run the task sees only its rank's rows
    if ctx.active:
        task.data = original


__all__ = [
    "DistContext",
    "DistributedError",
    "RankInfo",
    "ShardedData",
    "backend_for",
    "rank_device",
    "rank_info",
    "setup",
    "shard_rows",
    "shard_task",
    "unshard_task",
]
