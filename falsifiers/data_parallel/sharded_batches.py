"""Each data-parallel rank takes its share of every global batch, in this process.

FALSIFY-DDP-001 trains on two gloo ranks in child processes.  Here the view each rank trains
through (``engine.distributed.ShardedData``) is read directly for 2 and 4 ranks over both kinds
of training data: rank r of W gets rows r, r + W, r + 2W, ... of the global batch (what
PyTorch's DistributedSampler gives), the ranks' rows together are the batch exactly once, and
everything but the batch (the digest, the validation batches) is the data set's own.  The
refusals a user meets are compared word for word.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.distributed import DistributedError, ShardedData, shard_rows
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

STEPS = (0, 5)
GLOBAL_BATCH = 8


def _rows(batch: Any) -> list[torch.Tensor]:
    return list(batch) if isinstance(batch, tuple) else [batch]


@checker(
    observes=["shares", "rows_differing", "batches_not_covered", "delegated_differing", "refusals_differing"],
    ids=["FALSIFY-DDP-003"],
)
def ranks_take_their_rows(pretrain_data: Any, instruction_data: Any) -> dict[str, Any]:
    """ShardedData over token windows (batch(step, 8, seq_len=16, seed=3), keywords passed on)
    and instruction rows (ids and labels), for world sizes 2 and 4 at steps 0 and 5."""

    calls: dict[str, tuple[Any, dict[str, Any], dict[str, Any]]] = {  # data, batch's and val_batches' keywords
        "tokens": (pretrain_data, {"seq_len": 16, "seed": 3}, {"batch_size": 2, "seq_len": 16, "max_batches": 2}),
        "instructions": (instruction_data, {"seed": 3}, {"batch_size": 2, "max_batches": 2}),
    }
    out: dict[str, Any] = {"shares": 0, "rows_differing": 0, "batches_not_covered": 0, "delegated_differing": 0}
    for data, kwargs, val_kwargs in calls.values():
        for world in (2, 4):
            views = [ShardedData(data, rank, world) for rank in range(world)]
            for step in STEPS:
                full = _rows(data.batch(step, GLOBAL_BATCH, **kwargs))
                shares = [_rows(view.batch(step, GLOBAL_BATCH, **kwargs)) for view in views]
                out["shares"] += len(shares)
                for rank, share in enumerate(shares):
                    want = [t[rank::world] for t in full]
                    out["rows_differing"] += len(share) != len(want) or any(
                        not torch.equal(a, b) for a, b in zip(share, want, strict=False)
                    )
                for k, tensor in enumerate(full):  # interleaved back, the ranks' rows are the batch
                    woven = torch.empty_like(tensor)
                    for rank, share in enumerate(shares):
                        woven[rank::world] = share[k]
                    out["batches_not_covered"] += not torch.equal(woven, tensor)
            out["delegated_differing"] += views[-1].digest != data.digest
            mine, theirs = views[1].val_batches(**val_kwargs), data.val_batches(**val_kwargs)
            out["delegated_differing"] += len(mine) != len(theirs) or any(
                not all(torch.equal(x, y) for x, y in zip(_rows(a), _rows(b), strict=True))
                for a, b in zip(mine, theirs, strict=False)
            )

    requests: list[tuple[Any, type[Exception], str]] = [
        (lambda: ShardedData(pretrain_data, 2, 2), ValueError, "rank 2 is outside a world of 2"),
        (lambda: ShardedData(pretrain_data, -1, 4), ValueError, "rank -1 is outside a world of 4"),
        (
            lambda: ShardedData(pretrain_data, 0, 4).batch(0, 6, seq_len=16, seed=3),
            DistributedError,
            "the global batch size 6 does not split over 4 processes; use a multiple of 4",
        ),
        (lambda: shard_rows([1, 2], 0, 2), TypeError, "cannot shard a batch of type list"),
    ]
    out["refusals_differing"] = refusals_differing(requests)
    return out
