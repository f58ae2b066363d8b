"""The GPU probe reads the GPU it is asked about, and each source the way it is documented.

FALSIFY-DEVICE-006/007 classify one GPU through NVML answers that do not depend on which device
is asked.  A machine with two GPUs is where that shows: here the stand-in NVML hands out a handle
object per device and answers only for handles it handed out, so a probe that asks about another
index, or passes something else than the handle, reads another device or fails; its shutdown can
fail as some drivers' does.  torch's CUDA is scripted the same way: a device count, properties
per index (a total a little under NVML's, as CUDA reports what the driver leaves usable), an old
torch's properties without ``is_integrated``, a property read that fails.  Every field of every
report is written out here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch

from engine.device import gpu_memory_class
from falsifiers.device_memory_class.device import NVML_ERROR_NOT_SUPPORTED, FakeNVMLError
from pv.checkers import checker

GIB = 2**30
OWN = "device has its own framebuffer memory"
ATS = "NVML addressing mode ATS (coherent unified memory)"
CUDA_INTEGRATED = "CUDA reports an integrated device"


@dataclass(frozen=True)
class Gpu:
    name: str
    total: int | None  # None: the memory query fails with another error than "not supported"
    mode: int  # NVML addressing mode: 0 none, 2 ATS


@dataclass
class Nvml:
    """A machine's NVML: its GPUs by index, and whether its shutdown fails."""

    gpus: list[Gpu]
    shutdown_fails: bool = False
    handles: dict[int, object] = field(default_factory=dict)

    def _gpu(self, handle: object) -> Gpu:
        for index, h in self.handles.items():
            if h is handle:
                return self.gpus[index]
        raise FakeNVMLError(4)  # NVML_ERROR_INVALID_ARGUMENT: not a handle it handed out

    def module(self) -> types.ModuleType:
        mod = types.ModuleType("pynvml")

        def handle(index: int) -> object:
            if not isinstance(index, int) or not 0 <= index < len(self.gpus):
                raise FakeNVMLError(4)
            return self.handles.setdefault(index, object())

        def memory(h: object) -> Any:
            total = self._gpu(h).total
            if total is None:
                raise FakeNVMLError(999)
            return types.SimpleNamespace(total=total, free=total, used=0)

        def shutdown() -> None:
            if self.shutdown_fails:
                raise FakeNVMLError(999)

        attrs: dict[str, Any] = {
            "NVMLError": FakeNVMLError,
            "NVML_ERROR_NOT_SUPPORTED": NVML_ERROR_NOT_SUPPORTED,
            "nvmlInit": lambda: None,
            "nvmlShutdown": shutdown,
            "nvmlDeviceGetCount": lambda: len(self.gpus),
            "nvmlDeviceGetHandleByIndex": handle,
            "nvmlDeviceGetName": lambda h: self._gpu(h).name,
            "nvmlDeviceGetMemoryInfo": memory,
            "nvmlDeviceGetAddressingMode": lambda h: self._gpu(h).mode,
        }
        for key, value in attrs.items():
            setattr(mod, key, value)
        return mod


@dataclass(frozen=True)
class Cuda:
    """torch's view: is_available, the device count, each index's properties (None: reading fails)."""

    available: bool
    props: tuple[Any, ...]
    count: int | None = None  # None: len(props)


@contextlib.contextmanager
def machine(nvml: Nvml | None, cuda: Cuda | None) -> Iterator[None]:
    def props(index: int) -> Any:
        if not isinstance(index, int) or cuda is None or not 0 <= index < len(cuda.props):
            raise AssertionError(f"invalid device ordinal {index!r}")
        p = cuda.props[index]
        if p is None:
            raise RuntimeError("CUDA error: unspecified launch failure")
        return p

    count = 0 if cuda is None else (len(cuda.props) if cuda.count is None else cuda.count)
    with (
        mock.patch.dict(sys.modules, {"pynvml": nvml.module() if nvml is not None else None}),
        mock.patch.object(torch.cuda, "is_available", lambda: cuda is not None and cuda.available),
        mock.patch.object(torch.cuda, "device_count", lambda: count),
        mock.patch.object(torch.cuda, "get_device_properties", props),
    ):
        yield


def _props(name: str, total: int, integrated: bool | None) -> Any:
    p = types.SimpleNamespace(name=name, total_memory=total)
    if integrated is not None:  # torch before 2.1 has no is_integrated
        p.is_integrated = integrated
    return p


TWO = [Gpu("NVIDIA GH200 480GB", 96 * GIB, 2), Gpu("NVIDIA H100 80GB HBM3", 80 * GIB, 0)]
NO_NVML = "nvidia-ml-py is not installed"


def _cases() -> list[tuple[str, Nvml | None, Cuda | None, int | None, dict[str, str] | None, dict[str, Any]]]:
    """(what, NVML, CUDA, index (None: the default), env (None: the process's), the report)."""

    def report(
        present: bool, name: str | None, total: int | None, cls: str, source: str, reason: str, nvml: bool
    ) -> dict[str, Any]:
        return {
            "present": present,
            "name": name,
            "total_memory_bytes": total,
            "memory_class": cls,
            "source": source,
            "reason": reason,
            "nvml": nvml,
        }

    h100 = report(True, "NVIDIA H100 80GB HBM3", 80 * GIB, "discrete", "nvml", OWN, True)
    gh200 = report(True, "NVIDIA GH200 480GB", 96 * GIB, "integrated", "nvml", ATS, True)
    return [
        ("the second of two GPUs", Nvml(TWO), None, 1, {}, h100),
        ("the first by default", Nvml(TWO), None, None, {}, gh200),
        ("the second, NVML's shutdown failing", Nvml(TWO, shutdown_fails=True), None, 1, {}, h100),
        (
            "a framebuffer of one byte",
            Nvml([Gpu("tiny", 1, 0)]),
            None,
            0,
            {},
            report(True, "tiny", 1, "discrete", "nvml", OWN, True),
        ),
        (
            "the process's environment read when none is given",
            Nvml(TWO),
            None,
            1,
            None,
            report(True, "NVIDIA H100 80GB HBM3", 80 * GIB, "integrated", "env", "PV_GPU_MEMORY_CLASS='unified'", True),
        ),
        (
            "CUDA not available though it counts devices",
            None,
            Cuda(False, (_props("NVIDIA A100", 40 * GIB, False),) * 2),
            1,
            {},
            report(False, None, None, "none", "none", f"no GPU ({NO_NVML})", False),
        ),
        (
            "CUDA with one device, asked for index 1",
            None,
            Cuda(True, (_props("NVIDIA A100", 40 * GIB, False),) * 2, count=1),
            1,
            {},
            report(False, None, None, "none", "none", f"no GPU ({NO_NVML})", False),
        ),
        (
            "CUDA's second device, its properties without is_integrated",
            None,
            Cuda(True, (_props("NVIDIA A100", 40 * GIB, True), _props("NVIDIA L4", 22 * GIB, None))),
            1,
            {},
            report(True, "NVIDIA L4", 22 * GIB, "discrete", "torch", OWN, False),
        ),
        (
            "CUDA's property read failing",
            None,
            Cuda(True, (None,)),
            0,
            {},
            report(False, None, None, "none", "none", f"no GPU ({NO_NVML})", False),
        ),
        (
            "NVML's total over CUDA's",
            Nvml([Gpu("NVIDIA H100 80GB HBM3", 80 * GIB, 0)]),
            Cuda(True, (_props("NVIDIA H100 80GB HBM3", 79 * GIB, False),)),
            0,
            {},
            report(True, "NVIDIA H100 80GB HBM3", 80 * GIB, "discrete", "torch", OWN, True),
        ),
        (
            "CUDA's total when NVML's memory query fails",
            Nvml([Gpu("NVIDIA H100 80GB HBM3", None, 0)]),
            Cuda(True, (_props("cuda name", 79 * GIB, False),)),
            0,
            {},
            report(True, "NVIDIA H100 80GB HBM3", 79 * GIB, "discrete", "torch", OWN, True),
        ),
    ]


@checker(observes=["cases", "cases_differing", "differing"], ids=["FALSIFY-DEVICE-008"])
def probe_reads_the_gpu_asked() -> dict[str, Any]:
    """gpu_memory_class on each scripted machine above; every field against the report written out."""

    differing = []
    cases = _cases()
    for what, nvml, cuda, index, env, want in cases:
        with machine(nvml, cuda), mock.patch.dict(os.environ, {"PV_GPU_MEMORY_CLASS": "unified"}):
            got = (
                (gpu_memory_class() if env is None else gpu_memory_class(env=env))
                if index is None
                else (gpu_memory_class(index) if env is None else gpu_memory_class(index, env=env))
            )
        if got.to_dict() != want:
            differing.append(f"{what}: {got.to_dict()} != {want}")
    return {"cases": len(cases), "cases_differing": len(differing), "differing": differing}
