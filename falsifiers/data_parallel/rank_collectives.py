"""What a rank's ``DistContext`` asks of ``torch.distributed``: read with stand-ins for the collectives.

The two-rank run of FALSIFY-DDP-001 exercises the CPU path of these calls for real.  What it
cannot show on one machine without GPUs, or shows only within its loss tolerance, is read here
with ``torch.distributed``'s functions replaced by stand-ins that record what they were asked (and
``all_reduce`` adding a second rank's share): which GPU a CUDA barrier names, that ``close``
destroys only a group this context created, and once, and that the global loss is the
token-weighted mean computed in float64.  No process group and no GPU are used.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import torch
import torch.distributed as dist

from engine.distributed import DistContext, DistributedError, RankInfo, shard_task, unshard_task
from pv.checkers import checker

OTHER_RANK = (1.234567891, 613)  # the second rank's mean loss and token count


@checker(observes=["barriers", "closes", "global_loss", "empty_batches", "wraps", "sharding"], ids=["FALSIFY-DDP-005"])
def rank_collectives() -> dict[str, Any]:
    """barrier on cuda:1, cuda and cpu; close with and without owning the group, twice; global_loss
    of a rank whose 777 tokens have mean loss 2.3456789, beside the second rank's share; wrap on
    cuda:1, cuda and cpu; shard_task and unshard_task."""

    job = RankInfo(1, 2, 1)
    calls: list[Any] = []
    with mock.patch.object(dist, "barrier", lambda **kw: calls.append(kw)):
        for device in ("cuda:1", "cuda", "cpu"):
            DistContext(job, torch.device(device)).barrier()
        DistContext(RankInfo(), torch.device("cuda:1")).barrier()  # one process: no barrier
    barriers = [c.get("device_ids") or "none" for c in calls]

    destroyed: list[str] = []
    closes = []
    with (
        mock.patch.object(dist, "is_initialized", lambda: True),
        mock.patch.object(dist, "destroy_process_group", lambda: destroyed.append("destroyed")),
    ):
        for owns in (False, True):
            ctx = DistContext(job, torch.device("cpu"), owns_group=owns)
            ctx.close()
            ctx.close()
            closes.append([owns, len(destroyed), ctx.owns_group])
            destroyed.clear()

    def second_rank(stats: torch.Tensor) -> None:
        stats += torch.tensor([OTHER_RANK[0] * OTHER_RANK[1], OTHER_RANK[1]], dtype=stats.dtype)

    loss, tokens = torch.tensor(2.3456789, requires_grad=True), 777
    with mock.patch.object(dist, "all_reduce", second_rank):
        scaled, value, total = DistContext(job, torch.device("cpu")).global_loss(loss, tokens)
    # the reference: float64 throughout, each rank's mean loss times its tokens, over all tokens
    want = (float(loss.detach()) * tokens + OTHER_RANK[0] * OTHER_RANK[1]) / (tokens + OTHER_RANK[1])
    want_scale = tokens * 2 / (tokens + OTHER_RANK[1])
    # a batch in which this rank holds no learned token, beside a second rank holding none, then one
    empty_batches: list[Any] = []
    for other_tokens in (0, 1):

        def other_rank(stats: torch.Tensor, n: int = other_tokens) -> None:
            stats += torch.tensor([0.0, float(n)], dtype=stats.dtype)

        with mock.patch.object(dist, "all_reduce", other_rank):
            try:
                empty_batches.append(DistContext(job, torch.device("cpu")).global_loss(torch.tensor(0.0), 0)[2])
            except DistributedError as exc:
                empty_batches.append(str(exc))
            except Exception as exc:  # a crash where a refusal was due: named, so the expect reads it
                empty_batches.append(f"{type(exc).__name__}: {exc}")
    # wrap: DistributedDataParallel (a stand-in recording its arguments) on the rank's GPU, with
    # the buffers not broadcast; the model itself outside a torchrun job
    made: list[Any] = []

    def ddp(module: Any, **kw: Any) -> str:
        made.append([kw.get("device_ids") or "none", kw.get("broadcast_buffers")])
        return "wrapped"

    model = torch.nn.Linear(2, 2)
    with mock.patch("torch.nn.parallel.DistributedDataParallel", ddp):
        for d in ("cuda:1", "cuda", "cpu"):
            DistContext(job, torch.device(d)).wrap(model)
        unwrapped = DistContext(RankInfo(), torch.device("cpu")).wrap(model) is model

    # shard_task puts rank 1 of 2's view on the task's data and unshard_task restores it; a task
    # without data it can batch is refused; one process changes nothing
    class Task:
        def __init__(self, data: Any) -> None:
            self.data = data

    class Data:
        def batch(self, step: int, batch_size: int) -> None:
            return None

    data = Data()
    task = Task(data)
    original = shard_task(task, DistContext(job))
    view = task.data
    unshard_task(task, original, DistContext(job))
    alone = Task(data)
    kept = shard_task(alone, DistContext()) is data and alone.data is data

    class Bare:
        """A task with no ``data`` attribute at all."""

    # no data, data that cannot batch, and no `data` attribute: each refused by its task's name;
    # one process asks nothing of the task
    refusals: list[Any] = []
    for refused in (Task(None), Task(object()), Bare()):
        try:
            shard_task(refused, DistContext(job))
            refusals.append(None)
        except DistributedError as exc:
            refusals.append(str(exc))
    refusal = refusals == [
        "Task has no `data` with a `batch` method, so it cannot be sharded over ranks",
        "Task has no `data` with a `batch` method, so it cannot be sharded over ranks",
        "Bare has no `data` with a `batch` method, so it cannot be sharded over ranks",
    ]
    bare_alone = shard_task(Bare(), DistContext()) is None
    sharding = [
        type(view).__name__,
        [getattr(view, "rank", None), getattr(view, "world_size", None), getattr(view, "data", None) is data],
        original is data and task.data is data,
        kept,
        refusal,
        bare_alone,
    ]
    return {
        "wraps": [made, unwrapped],
        "sharding": sharding,
        "barriers": barriers,
        "closes": closes,
        "global_loss": [
            value == want,
            total == tokens + OTHER_RANK[1],
            abs(float(scaled.detach()) - float(loss.detach()) * want_scale) <= 1e-6,
        ],
        "empty_batches": empty_batches,
    }
