"""Which GPU each rank of a ``torchrun`` job computes on.

Under ``torchrun`` a bare ``cuda`` device means the rank's own GPU, ``cuda:LOCAL_RANK``, made the
current device; an explicit index, a CPU device and a single process are left as given; a local
rank with no GPU of its own is refused.  This is a rule about indices, so it is read here with
``torch.cuda.device_count`` and ``torch.cuda.set_device`` replaced by a two-GPU stand-in that
records the calls: no GPU is needed, and none is claimed to have been used.
"""

from __future__ import annotations

import os
from typing import Any
from unittest import mock

import torch

from engine.distributed import DistributedError, RankInfo, rank_device
from pv.checkers import checker

VISIBLE = 2
INCONSISTENT = "inconsistent torchrun variables: RANK=2 WORLD_SIZE=2 LOCAL_RANK=2"
NO_GPU = "local rank 2 has no GPU of its own: 2 visible; use --nproc_per_node <= the number of GPUs or --device cpu"


@checker(observes=["cases", "differing", "not_integers"], ids=["FALSIFY-DDP-004"])
def each_rank_its_gpu() -> dict[str, Any]:
    """rank_device on bare, indexed and CPU devices, with and without a torchrun job, given the job
    or reading it from the environment (a second node's ranks, LOCAL_RANK or RANK left out, a rank
    past the world), and for a local rank past the visible GPUs."""

    job = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    # (case, device, rank info or None to read the environment, environment, device, set_device calls)
    cases: list[tuple[str, str, RankInfo | None, dict[str, str], str, list[int]]] = [
        ("rank 1 of 2, bare cuda", "cuda", RankInfo(1, 2, 1), {}, "cuda:1", [1]),
        ("rank 0 of 2, bare cuda", "cuda", RankInfo(0, 2, 0), {}, "cuda:0", [0]),
        ("rank 1 of 2 from torchrun's variables", "cuda", None, job, "cuda:1", [1]),
        ("rank 1 of 2, cuda:0 pinned", "cuda:0", RankInfo(1, 2, 1), {}, "cuda:0", []),
        ("one process, bare cuda", "cuda", RankInfo(), {}, "cuda", []),
        ("one process from the environment", "cuda", None, {}, "cuda", []),
        ("rank 1 of 2 on the cpu", "cpu", RankInfo(1, 2, 1), {}, "cpu", []),
        ("local rank 2 of 3, two GPUs", "cuda", RankInfo(2, 3, 2), {}, f"refused: {NO_GPU}", []),
        # a second node: the global rank is not the GPU index, LOCAL_RANK is
        ("rank 3 of 4, local rank 1", "cuda", None, {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}, "cuda:1", [1]),
        ("rank 1 of 2 without LOCAL_RANK", "cuda", None, {"RANK": "1", "WORLD_SIZE": "2"}, "cuda:1", [1]),
        ("WORLD_SIZE alone", "cuda", None, {"WORLD_SIZE": "2"}, "cuda:0", [0]),
        ("RANK past WORLD_SIZE", "cuda", None, {"RANK": "2", "WORLD_SIZE": "2"}, f"refused: {INCONSISTENT}", []),
    ]
    differing = []
    for name, device, info, env, want, want_calls in cases:
        calls: list[int] = []
        clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        with (
            mock.patch.dict(os.environ, {**clean, **env}, clear=True),
            mock.patch.object(torch.cuda, "device_count", lambda: VISIBLE),
            mock.patch.object(torch.cuda, "set_device", calls.append),
        ):
            try:
                got = str(rank_device(torch.device(device), info))
            except DistributedError as exc:
                got = f"refused: {exc}"
        if (got, calls) != (want, want_calls):
            differing.append([name, got, calls])
    # a variable that is not an integer: refused naming it (the rest of the text is Python's own)
    not_integers: list[bool] = []
    for value in ("one", "1.5"):
        with mock.patch.dict(os.environ, {"RANK": value, "WORLD_SIZE": "2"}):
            try:
                rank_device(torch.device("cuda"))
                said = ""
            except DistributedError as exc:
                said = str(exc)
        not_integers.append(said.startswith("torchrun variables are not integers: ") and repr(value) in said)
    return {"cases": len(cases), "differing": differing, "not_integers": not_integers}
