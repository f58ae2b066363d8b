"""Every field of the GPU report, for each kind of machine the probes can meet.

FALSIFY-DEVICE-001..003 hold the class ``engine.device.gpu_memory_class`` decides.  The report a
user reads also names the device, its memory, which probe decided and why, and whether NVML
answered at all; when no GPU is found, the reason says what the probe met (no bindings, an NVML
that does not start, no device, a query that failed).  Each report is compared field for field
with the one written out here, NVML scripted with the stand-in module of falsifiers/device_memory_class/device.py and
torch's CUDA answers patched where a scenario has CUDA see the device.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any
from unittest import mock

import torch

from engine.device import gpu_memory_class
from falsifiers.device_memory_class.device import NvmlScenario, fake_pynvml, nvml_answers
from pv.checkers import checker

GIB = 2**30
OWN = "device has its own framebuffer memory"
ATS = 2  # nvml.h: NVML_DEVICE_ADDRESSING_MODE_ATS


@contextlib.contextmanager
def cuda_sees(name: str, total: int, integrated: bool) -> Iterator[None]:
    """No pynvml, and torch's CUDA reporting one device with these properties."""
    props = types.SimpleNamespace(name=name, total_memory=total, is_integrated=integrated)
    with (
        mock.patch.dict(sys.modules, {"pynvml": None}),
        mock.patch.object(torch.cuda, "is_available", lambda: True),
        mock.patch.object(torch.cuda, "device_count", lambda: 1),
        mock.patch.object(torch.cuda, "get_device_properties", lambda index: props),
    ):
        yield


def _query_fails() -> types.ModuleType:
    module = fake_pynvml(NvmlScenario())

    def handle(index: int) -> Any:
        raise module.NVMLError(999)

    module.nvmlDeviceGetHandleByIndex = handle  # type: ignore[attr-defined]
    return module


def _cases() -> list[tuple[str, Any, int, dict[str, str] | None, tuple[Any, ...]]]:
    """(what, context, index, env, (present, name, total, class, source, reason, nvml))."""
    h100 = "NVIDIA H100 80GB HBM3"
    return [
        ("no bindings", nvml_answers(None), 0, {},
         (False, None, None, "none", "none", "no GPU (nvidia-ml-py is not installed)", False)),
        ("NVML does not start", nvml_answers(fake_pynvml(NvmlScenario(init_fails=True))), 0, {},
         (False, None, None, "none", "none", "no GPU (NVML unavailable: NVML error 12)", False)),
        ("no device", nvml_answers(fake_pynvml(NvmlScenario(device_count=0))), 0, {},
         (False, None, None, "none", "none", "no GPU (NVML sees no GPU)", True)),
        ("index past the devices", nvml_answers(fake_pynvml(NvmlScenario())), 1, {},
         (False, None, None, "none", "none", "no GPU (NVML sees no GPU)", True)),
        ("the query fails", nvml_answers(_query_fails()), 0, {},
         (False, None, None, "none", "none", "no GPU (NVML query failed: NVML error 999)", True)),
        ("a discrete card", nvml_answers(fake_pynvml(NvmlScenario())), 0, {},
         (True, h100, 80 * GIB, "discrete", "nvml", OWN, True)),
        ("a name in bytes", nvml_answers(fake_pynvml(NvmlScenario(name=h100.encode()))), 0, {},
         (True, h100, 80 * GIB, "discrete", "nvml", OWN, True)),
        ("no framebuffer", nvml_answers(fake_pynvml(NvmlScenario(name="NVIDIA GB10", memory="not_supported"))), 0, {},
         (True, "NVIDIA GB10", None, "integrated", "nvml", "NVML reports no framebuffer of its own", True)),
        ("ATS, memory unreadable",
         nvml_answers(fake_pynvml(NvmlScenario(name="NVIDIA GH200", memory="error", addressing_mode=ATS))), 0, {},
         (True, "NVIDIA GH200", None, "integrated", "nvml",
          "NVML addressing mode ATS (coherent unified memory)", True)),
        ("no addressing call, memory unreadable",
         nvml_answers(fake_pynvml(NvmlScenario(memory="error", addressing_mode=None))), 0, {},
         (True, h100, None, "unknown", "none",
          "GPU present but neither CUDA nor NVML said how its memory is attached", True)),
        ("the override", nvml_answers(fake_pynvml(NvmlScenario())), 0, {"PV_GPU_MEMORY_CLASS": "unified"},
         (True, h100, 80 * GIB, "integrated", "env", "PV_GPU_MEMORY_CLASS='unified'", True)),
        ("CUDA alone, integrated", cuda_sees("Orin", 64 * GIB, True), 0, {},
         (True, "Orin", 64 * GIB, "integrated", "torch", "CUDA reports an integrated device", False)),
        ("CUDA alone, discrete", cuda_sees("NVIDIA L4", 24 * GIB, False), 0, {},
         (True, "NVIDIA L4", 24 * GIB, "discrete", "torch", OWN, False)),
    ]  # fmt: skip


@checker(observes=["reports", "reports_differing", "differing"], ids=["FALSIFY-DEVICE-007"])
def gpu_reports_field_for_field() -> dict[str, Any]:
    """gpu_memory_class on each scripted machine above, every field of the report."""

    cases = _cases()
    differing = []
    for what, context, index, env, want in cases:
        with context:
            r = gpu_memory_class(index, env=env)
        got = (r.present, r.name, r.total_memory_bytes, r.memory_class, r.source, r.reason, r.nvml)
        if got != want:
            differing.append(f"{what}: {got} != {want}")
    return {"reports": len(cases), "reports_differing": len(differing), "differing": differing}
