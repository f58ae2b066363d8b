"""Which ``torch.distributed`` backend a run under ``torchrun`` joins with, for each device.

The reference is torch's own table of default backends per device type
(``torch.distributed.Backend.default_device_backend_map``): gloo for CPU tensors, NCCL for CUDA
ones.  A CUDA run on a torch build without NCCL (the CPU wheel) is refused naming NCCL before any
process group is joined.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from engine.distributed import DistributedError, backend_for, setup
from pv.checkers import checker

DEVICES = ("cpu", "cuda", "cuda:1")
TORCHRUN_ENV = {
    "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511",
}  # fmt: skip


@checker(observes=["devices", "backends_differing", "nccl_available", "nccl_missing_refused"], ids=["FALSIFY-DDP-002"])
def backend_is_torch_default() -> dict[str, Any]:
    """backend_for on each device against torch's table; setup on CUDA where NCCL is missing."""

    table = dist.Backend.default_device_backend_map
    out: dict[str, Any] = {"devices": len(DEVICES), "backends_differing": 0}
    for name in DEVICES:
        device = torch.device(name)
        out["backends_differing"] += backend_for(device) != table[device.type]
    out["nccl_available"] = dist.is_nccl_available()
    out["nccl_missing_refused"] = False
    # only where the backend is right: a gloo group would start a rendezvous with ranks that never come
    if not out["nccl_available"] and not dist.is_initialized() and backend_for(torch.device("cuda")) == "nccl":
        try:
            setup(torch.device("cuda"), TORCHRUN_ENV)
        except DistributedError as exc:
            out["nccl_missing_refused"] = "NCCL" in str(exc) and not dist.is_initialized()
        except Exception:  # any other failure is not the refusal claimed
            out["nccl_missing_refused"] = False
    return out
