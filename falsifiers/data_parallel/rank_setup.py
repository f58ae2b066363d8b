"""How a rank joins the process group ``torchrun`` describes: read with stand-ins for torch.distributed.

FALSIFY-DDP-001's torchrun children call ``engine.distributed.setup`` for real, on the CPU, and only
there.  What they cannot show on one machine without GPUs is read here with the functions
``setup`` asks of ``torch.distributed`` replaced by stand-ins that record the call: the arguments
``init_process_group`` is given (rank, world size, backend and, on CUDA, the rank's own device),
that a group the caller already made is taken as it is and not owned (so ``close`` leaves it), and
the four refusals, word for word.  No process group is made and no GPU is used.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any
from unittest import mock

import torch
import torch.distributed as dist

from engine.distributed import DistributedError, setup
from pv.checkers import checker

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
REFUSALS = {
    "no torch.distributed": "this torch build has no torch.distributed",
    "a group of another size": "the process group (rank 1 of 4) does not match RANK=1 WORLD_SIZE=2",
    "a group as another rank": "the process group (rank 0 of 2) does not match RANK=1 WORLD_SIZE=2",
    "cuda without NCCL": "CUDA training under torchrun needs NCCL, which this torch build lacks",
}


class _Dist:
    """What ``setup`` may ask of torch.distributed, as one configurable stand-in."""

    def __init__(self, *, available: bool = True, group: tuple[int, int] | None = None, nccl: bool = True) -> None:
        self.available, self.group, self.nccl = available, group, nccl
        self.inits: list[dict[str, Any]] = []

    def setup(self, device: str, environ: dict[str, str]) -> Any:
        """engine.distributed.setup with this stand-in in torch.distributed's place."""

        patches = {
            "is_available": lambda: self.available,
            "is_initialized": lambda: self.group is not None,
            "get_rank": lambda: self.group[0] if self.group else -1,
            "get_world_size": lambda: self.group[1] if self.group else -1,
            "is_nccl_available": lambda: self.nccl,
            "init_process_group": lambda **kw: self.inits.append(kw),
        }
        with ExitStack() as stack:
            for name, stand_in in patches.items():
                stack.enter_context(mock.patch.object(dist, name, stand_in))
            return setup(torch.device(device), environ)


def _init_call(kwargs: dict[str, Any]) -> list[list[Any]]:
    return [[k, str(v) if isinstance(v, torch.device) else v] for k, v in sorted(kwargs.items())]


@checker(observes=["joins", "refusals_differing"], ids=["FALSIFY-DDP-006"])
def rank_joins_group() -> dict[str, Any]:
    """setup on cpu, cuda:1 and cuda with rank 1 of 2's torchrun variables, outside torchrun and
    with WORLD_SIZE=1, and beside a group already made; the four setups it must refuse."""

    cases: list[tuple[str, str, dict[str, str], _Dist]] = [
        ("outside torchrun", "cpu", {}, _Dist()),
        ("one process", "cuda:1", {"WORLD_SIZE": "1", "RANK": "0"}, _Dist()),
        ("cpu", "cpu", TORCHRUN, _Dist()),
        ("cuda:1", "cuda:1", TORCHRUN, _Dist()),
        ("a group already made", "cpu", TORCHRUN, _Dist(group=(1, 2))),
        ("a group already made, cuda:1", "cuda:1", TORCHRUN, _Dist(group=(1, 2))),
    ]
    joins: list[list[Any]] = []
    for name, device, environ, stand_in in cases:
        ctx = stand_in.setup(device, environ)
        joins.append(
            [name, [ctx.rank, ctx.world_size], str(ctx.device), ctx.owns_group, [_init_call(c) for c in stand_in.inits]]
        )

    refusing = {
        "no torch.distributed": ("cpu", _Dist(available=False)),
        "a group of another size": ("cpu", _Dist(group=(1, 4))),
        "a group as another rank": ("cpu", _Dist(group=(0, 2))),
        "cuda without NCCL": ("cuda:1", _Dist(nccl=False)),
    }
    differing: list[list[Any]] = []
    for name, (device, stand_in) in refusing.items():
        said: Any = "no refusal"
        try:
            stand_in.setup(device, TORCHRUN)
        except DistributedError as exc:
            said = str(exc)
        if said != REFUSALS[name] or stand_in.inits:
            differing.append([name, said, len(stand_in.inits)])
    return {"joins": joins, "refusals_differing": differing}
