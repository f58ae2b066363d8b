"""What ``measure_training`` reads on a GPU: the measured device's own allocator, through stand-ins.

On a GPU the figures come from PyTorch's caching allocator, not the process's RSS: the bytes
allocated on the device before and after the build, and the device's peak since it was reset
before the build.  A machine without a GPU never takes that branch, so here ``torch.cuda``'s
allocator calls are replaced by a stand-in GPU pair that keeps its own books: device 0 (the
current device) and device 1 (the one measured), each with bytes left allocated and a peak left
over from earlier work.  The builder allocates the model's bytes on device 1 and each step's
forward its activations (the step before's freed as the next forward starts), so the figures
follow from those numbers alone and the contract writes them out.  Reading the current device
instead of the one measured, a peak never reset, or RSS gives other numbers.  No GPU is used.
"""

from __future__ import annotations

from contextlib import ExitStack
from types import SimpleNamespace
from typing import Any
from unittest import mock

import torch
from torch import nn

from engine.memory import measure_training
from pv.checkers import checker

MEASURED = 1  # the device measured: not the current one, whose books differ
START = {0: 111, 1: 7_000}  # bytes each device holds before the measurement
EARLIER_PEAK = {0: 999_999, 1: 50_000}  # each device's peak from work before it
MODEL = 4_096  # what the builder allocates on the measured device
ACTIVATIONS = (1_000, 2_000, 3_500)  # what each step's forward allocates there, freed by the next forward


class _Gpus:
    """The allocator's books of two stand-in GPUs, and the calls made to them in order."""

    def __init__(self) -> None:
        self.allocated = dict(START)
        self.peak = dict(EARLIER_PEAK)
        self.calls: list[tuple[str, str]] = []

    @staticmethod
    def index(device: Any) -> int:
        if device is None:
            return 0  # torch.cuda's functions read the current device when given none
        if isinstance(device, int):
            return device
        return torch.device(device).index or 0

    def alloc(self, index: int, nbytes: int) -> None:
        self.calls.append(("work", f"cuda:{index}"))
        self.allocated[index] += nbytes
        self.peak[index] = max(self.peak[index], self.allocated[index])

    def record(self, name: str, device: Any) -> int:
        index = self.index(device)
        self.calls.append((name, f"cuda:{index}"))
        return index

    def synchronize(self, device: Any = None) -> None:
        self.record("synchronize", device)

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        index = self.record("reset_peak_memory_stats", device)
        self.peak[index] = self.allocated[index]

    def memory_allocated(self, device: Any = None) -> int:
        return self.allocated[self.record("memory_allocated", device)]

    def max_memory_allocated(self, device: Any = None) -> int:
        return self.peak[self.record("max_memory_allocated", device)]

    def patches(self) -> list[Any]:
        names = ("synchronize", "reset_peak_memory_stats", "memory_allocated", "max_memory_allocated")
        # cached blocks are not allocated bytes: emptying the cache changes none of the books
        return [mock.patch.object(torch.cuda, "empty_cache", lambda: None)] + [
            mock.patch.object(torch.cuda, name, getattr(self, name)) for name in names
        ]


class _Model(nn.Module):
    """One weight; each forward allocates that step's activations on the stand-in GPU."""

    def __init__(self, gpus: _Gpus) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))
        self.gpus = gpus
        self.forwards = 0

    def forward(self, ids: torch.Tensor, labels: torch.Tensor | None = None) -> SimpleNamespace:
        if self.forwards:  # the step before's activations are freed before this step's are made
            self.gpus.allocated[MEASURED] -= ACTIVATIONS[self.forwards - 1]
        self.gpus.alloc(MEASURED, ACTIVATIONS[self.forwards])
        self.forwards += 1
        return SimpleNamespace(loss=(self.weight * ids.float()).sum())


@checker(
    observes=["results", "devices_asked", "peak_reset_before_build", "peak_read_after_sync"], ids=["FALSIFY-QMEM-012"]
)
def gpu_measurement_reads_its_device(steps: list[int]) -> dict[str, Any]:
    """measure_training on ``cuda:1`` of the stand-in pair, once for each number of steps: the
    result's fields, the devices torch.cuda was asked about, and the order of the calls."""

    results, devices, reset_first, synced = [], set[str](), [], []
    for n in steps:
        gpus = _Gpus()

        def build(gpus: _Gpus = gpus) -> nn.Module:
            gpus.alloc(MEASURED, MODEL)
            return _Model(gpus)

        def batch() -> tuple[torch.Tensor, torch.Tensor]:
            ids = torch.ones(1, 4, dtype=torch.long)
            return ids, ids

        with ExitStack() as stack:
            for patch in gpus.patches():
                stack.enter_context(patch)
            got = measure_training(build, batch, steps=n, device=f"cuda:{MEASURED}")
        results.append([got.device, got.model_bytes, got.training_bytes, got.peak_bytes, got.steps])
        devices |= {device for name, device in gpus.calls if name != "work"}
        names = [name for name, _ in gpus.calls]
        reset_first.append(
            "reset_peak_memory_stats" in names and names.index("reset_peak_memory_stats") < names.index("work")
        )
        last_work = len(names) - 1 - names[::-1].index("work")
        peak_read = names.index("max_memory_allocated") if "max_memory_allocated" in names else -1
        synced.append(peak_read > last_work and "synchronize" in names[last_work:peak_read])
    return {
        "results": results,
        "devices_asked": sorted(devices),
        "peak_reset_before_build": reset_first,
        "peak_read_after_sync": synced,
    }
