"""Where the engine runs: CPU, CUDA, Apple's MPS or Intel's XPU, and what kind of memory the GPU has.

``resolve_device`` picks CUDA when torch sees it, else XPU, else MPS, else CPU; an explicit
argument or the ``PV_DEVICE`` environment variable overrides the choice.  bitsandbytes has NF4
kernels for CUDA and CPU only, so NF4 work asked for on MPS or XPU runs on the CPU
(:func:`nf4_device`, with a warning) while everything else stays on the accelerator.
``gpu_memory_class`` asks NVML (via ``nvidia-ml-py``) whether the GPU has its own memory
(discrete) or shares the host's (integrated / unified, e.g. Jetson, GB10, Grace Hopper's ATS).
Probing never raises: a machine without NVML or without a GPU gets a ``none`` answer with the
reason.  The decision itself is the pure function :func:`classify_memory_class`, so it can be
checked on any machine.

Imports inside functions: pynvml (nvidia-ml-py) is optional and probed only on a CUDA machine.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import torch

from engine.errors import EngineError
from engine.faults import FAULTS

DEVICE_ENV = "PV_DEVICE"
MEMORY_CLASS_ENV = "PV_GPU_MEMORY_CLASS"

MemoryClass = Literal["integrated", "discrete", "none", "unknown"]

# NVML's addressing modes (nvmlDeviceGetAddressingMode): ATS means the GPU walks the host's page
# tables coherently, which is the unified-memory case (Grace Hopper/Blackwell).
ADDRESSING_MODE_HMM = 1
ADDRESSING_MODE_ATS = 2

_OVERRIDE_SPELLINGS: dict[str, MemoryClass] = {
    "integrated": "integrated",
    "unified": "integrated",
    "shared": "integrated",
    "discrete": "discrete",
    "dedicated": "discrete",
}


class DeviceError(EngineError, ValueError):
    """A requested device this machine cannot provide."""


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def xpu_available() -> bool:
    xpu = getattr(torch, "xpu", None)
    return bool(xpu is not None and xpu.is_available())


def resolve_device(requested: str | torch.device | None = None) -> torch.device:
    """The device to run on: ``requested``, else ``$PV_DEVICE``, else the first of CUDA, XPU and MPS
    that torch offers, else CPU."""
    choice: str | torch.device | None = requested
    origin = "argument"
    if choice is None or choice == "" or choice == "auto":
        env = os.environ.get(DEVICE_ENV, "").strip()
        if FAULTS.active("pv_device_env_ignored"):  # the defect: $PV_DEVICE is never read
            env = ""  # pragma: no mutate
        choice, origin = (env, DEVICE_ENV) if env and env != "auto" else (None, "auto")
    if choice is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if xpu_available():
            return torch.device("xpu")
        return torch.device("mps" if mps_available() else "cpu")
    try:
        device = torch.device(choice)
    except (RuntimeError, TypeError) as exc:
        raise DeviceError(
            f"{origin}: {choice!r} is not a device name (expected cpu, cuda, cuda:N, mps, xpu, xpu:N or auto)"
        ) from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"{origin} asks for {device} but torch sees no CUDA device on this machine")
        count = torch.cuda.device_count()
        if FAULTS.active("cuda_index_past_count_accepted"):  # the defect: cuda:N passes on N GPUs
            count += 1  # pragma: no mutate
        if device.index is not None and device.index >= count:
            raise DeviceError(f"{origin} asks for {device} but only {torch.cuda.device_count()} CUDA device(s) exist")
    elif device.type == "mps":
        if not mps_available():
            raise DeviceError(f"{origin} asks for mps but this torch build or machine has no MPS backend")
    elif device.type == "xpu":
        if not xpu_available():
            raise DeviceError(f"{origin} asks for {device} but torch sees no XPU device on this machine")
    elif device.type not in ("cpu", "meta"):
        raise DeviceError(
            f"{origin}: device type {device.type!r} is not supported by the engine (cpu, cuda, mps or xpu)"
        )
    return device


def nf4_device(device: torch.device) -> torch.device:
    """Where NF4 (bitsandbytes) work can run for a run asked to use ``device``: CUDA and CPU as they
    are, MPS and XPU fall back to the CPU (bitsandbytes has no NF4 kernels there), with a warning."""
    if device.type in ("cuda", "cpu", "meta"):
        return device

    warnings.warn(
        f"bitsandbytes has no NF4 kernels for {device.type}: the NF4 part of this run uses the CPU",
        RuntimeWarning,
        stacklevel=2,
    )
    return torch.device("cpu")


@dataclass(frozen=True)
class MemoryClassDecision:
    memory_class: MemoryClass
    source: str  # "env", "torch", "nvml", "none"
    reason: str


def classify_memory_class(
    *,
    gpu_present: bool,
    override: str | None = None,
    is_integrated: bool | None = None,
    addressing_mode: int | None = None,
    framebuffer_reported: bool | None = None,
) -> MemoryClassDecision:
    """Decide the GPU memory class from what the probes saw.  Total: any inputs give an answer.

    ``is_integrated`` comes from the CUDA device properties, ``addressing_mode`` from NVML,
    ``framebuffer_reported`` is False when NVML says the device has no framebuffer memory info of
    its own (what Jetson/GB10-class parts answer).
    """
    decision = _classify(gpu_present, override, is_integrated, addressing_mode, framebuffer_reported)
    if FAULTS.active("memory_class_inverted") and decision.memory_class in ("integrated", "discrete"):
        flipped: dict[str, MemoryClass] = {"integrated": "discrete", "discrete": "integrated"}  # pragma: no mutate
        return replace(decision, memory_class=flipped[decision.memory_class])  # pragma: no mutate
    if FAULTS.active("memory_class_source_unreported"):  # the defect: which probe decided is not said
        return replace(decision, source="none")  # pragma: no mutate
    return decision


def _classify(
    gpu_present: bool,
    override: str | None,
    is_integrated: bool | None,
    addressing_mode: int | None,
    framebuffer_reported: bool | None,
) -> MemoryClassDecision:
    if not gpu_present:
        note = f" ({MEMORY_CLASS_ENV}={override!r} ignored: nothing to classify)" if override else ""
        return MemoryClassDecision("none", "none", "no GPU" + note)
    ignored = ""
    if override is not None and override.strip():
        key = override.strip().lower()
        if key in _OVERRIDE_SPELLINGS:
            return MemoryClassDecision(_OVERRIDE_SPELLINGS[key], "env", f"{MEMORY_CLASS_ENV}={override!r}")
        ignored = f"; {MEMORY_CLASS_ENV}={override!r} is not one of {', '.join(sorted(_OVERRIDE_SPELLINGS))}, ignored"
    if is_integrated is True:
        return MemoryClassDecision("integrated", "torch", "CUDA reports an integrated device" + ignored)
    if addressing_mode == ADDRESSING_MODE_ATS:
        return MemoryClassDecision("integrated", "nvml", "NVML addressing mode ATS (coherent unified memory)" + ignored)
    if framebuffer_reported is False:
        return MemoryClassDecision("integrated", "nvml", "NVML reports no framebuffer of its own" + ignored)
    if is_integrated is False or framebuffer_reported is True:
        source = "torch" if is_integrated is False else "nvml"
        return MemoryClassDecision("discrete", source, "device has its own framebuffer memory" + ignored)
    why = "GPU present but neither CUDA nor NVML said how its memory is attached"
    return MemoryClassDecision("unknown", "none", why + ignored)


@dataclass(frozen=True)
class GpuReport:
    present: bool
    name: str | None
    total_memory_bytes: int | None
    memory_class: MemoryClass
    source: str
    reason: str
    nvml: bool  # whether NVML answered at all

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _probe_nvml(index: int) -> tuple[bool, str | None, int | None, int | None, bool | None, str]:
    """(nvml ok, name, total bytes, addressing mode, framebuffer reported, note); never raises."""
    try:
        import pynvml
    except ImportError:
        return False, None, None, None, None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        if FAULTS.active("nvml_missing_raises"):
            raise  # the planted defect: the init failure escapes the probe  # pragma: no mutate
        return False, None, None, None, None, f"NVML unavailable: {exc}"
    try:
        if pynvml.nvmlDeviceGetCount() <= index:
            return True, None, None, None, None, "NVML sees no GPU"
        if FAULTS.active("nvml_probe_reads_first_gpu"):  # the defect: every index reads GPU 0's answers
            index = 0  # pragma: no mutate
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else str(name)
        total: int | None = None
        framebuffer: bool | None = None
        try:
            total = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            framebuffer = total > 0
        except pynvml.NVMLError as exc:
            if getattr(exc, "value", None) == pynvml.NVML_ERROR_NOT_SUPPORTED:
                framebuffer = False
        mode: int | None = None
        try:
            mode = int(pynvml.nvmlDeviceGetAddressingMode(handle))
        except Exception:  # older drivers lack the call; the other signals decide
            mode = None
        return True, name, total, mode, framebuffer, "NVML"
    except Exception as exc:
        return True, None, None, None, None, f"NVML query failed: {exc}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def gpu_memory_class(index: int = 0, env: dict[str, str] | None = None) -> GpuReport:
    """Probe GPU ``index``: present or not, its name, memory and memory class.  Never raises."""
    environ = os.environ if env is None else env
    # The planted defect reads no override at all.
    override = None if FAULTS.active("memory_class_override_ignored") else environ.get(MEMORY_CLASS_ENV)
    nvml_ok, name, total, mode, framebuffer, note = _probe_nvml(index)
    is_integrated: bool | None = None
    torch_present = False
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > index:
            torch_present = True
            props = torch.cuda.get_device_properties(index)
            is_integrated = bool(getattr(props, "is_integrated", False))
            name = name or props.name
            total = total if total is not None else int(props.total_memory)
    except Exception:
        torch_present = False
    present = torch_present or name is not None
    decision = classify_memory_class(
        gpu_present=present,
        override=override,
        is_integrated=is_integrated,
        addressing_mode=mode,
        framebuffer_reported=framebuffer,
    )
    reason = decision.reason if present else f"{decision.reason} ({note})"
    if FAULTS.active("gpu_report_probe_note_dropped"):  # the defect: a no-GPU report hides what the probe met
        reason = decision.reason  # pragma: no mutate
    return GpuReport(present, name, total, decision.memory_class, decision.source, reason, nvml_ok)
