"""What the brick timer and the memory limit ask of CUDA: read with stand-ins for torch.cuda.

GPU kernels run asynchronously: a timer that reads the clock without synchronizing the device
first times the kernel launches, not the work (PyTorch's benchmark utilities synchronize for
that reason).  On a machine without a GPU the timer's CUDA branch is never taken, so here
``torch.cuda.synchronize`` and ``torch.cuda.mem_get_info`` are replaced by stand-ins that record
their calls, and ``time_call`` is driven on ``cuda:1`` with functions that record theirs.  Every
timed batch (the warm-up calls, the brick's repetitions and the reference workload's) must open
and close with a synchronize of the device being timed; the CPU asks for none; the memory a bench
may use on a GPU is that GPU's free memory in GiB.  No GPU is used.
"""

from __future__ import annotations

import itertools
from typing import Any
from unittest import mock

import torch

from engine.bricks import available_memory_gib, time_call
from pv.checkers import checker

GIB = 2**30
FREE, TOTAL = 3 * GIB + GIB // 2, 8 * GIB  # what the stand-in GPU reports


def _batches(events: list[str]) -> tuple[list[list[Any]], int]:
    """The calls between each pair of synchronizes, and how many calls no pair brackets."""
    batches: list[list[Any]] = []
    open_batch: list[str] | None = None
    loose = 0
    for event in events:
        if event == "sync":
            if open_batch is None:
                open_batch = []
            else:
                batches.append([name for name, _ in itertools.groupby(open_batch)] + [len(open_batch)])
                open_batch = None
        elif open_batch is None:
            loose += 1
        else:
            open_batch.append(event)
    return batches, loose + len(open_batch or [])


@checker(observes=["cuda_batches", "loose_calls", "synced_devices", "cpu_syncs", "free_gib"], ids=["FALSIFY-BREP-007"])
def gpu_timer_synchronises() -> dict[str, Any]:
    """time_call on cuda:1 and on the CPU (1 warm-up, 2 repetitions, a reference workload, a
    counting clock); available_memory_gib on cuda:1 beside a stand-in GPU with 3.5 GiB free."""

    events: list[str] = []
    devices: list[str] = []

    def synchronize(device: Any = None) -> None:
        events.append("sync")
        devices.append(str(device))

    ticks = itertools.count()

    def run(device: str) -> None:
        time_call(
            lambda: events.append("brick"),
            warmup=1,
            reps=2,
            device=torch.device(device),
            clock=lambda: float(next(ticks)),
            reference=lambda: events.append("reference"),
        )

    asked: list[str] = []

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        asked.append(str(device))
        return FREE, TOTAL

    with (
        mock.patch.object(torch.cuda, "synchronize", synchronize),
        mock.patch.object(torch.cuda, "mem_get_info", mem_get_info),
    ):
        run("cuda:1")
        batches, loose = _batches(events)
        synced = sorted(set(devices))
        events.clear()
        run("cpu")
        cpu_syncs = events.count("sync")
        free = available_memory_gib(torch.device("cuda:1"))
    return {
        "cuda_batches": batches,
        "loose_calls": loose,
        "synced_devices": synced,
        "cpu_syncs": cpu_syncs,
        "free_gib": [free, asked],
    }
