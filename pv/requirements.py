"""``requires:`` entries of a falsifier: what hardware or software it needs before it can run.

Grammar (one string per entry)::

    cpu                 always met: the falsifier runs anywhere
    cuda                a CUDA device is visible to torch
    cuda_mem_gib>=N     the first CUDA device this process sees has at least N GiB of memory
    cuda_free_gib>=N    it has at least N GiB *free* right now (NVML when nvidia-ml-py is
                        installed, which creates no CUDA context; else torch.cuda.mem_get_info);
                        the plugin can wait for it (--pv-vram-wait SECONDS) before skipping
    gpus>=N             at least N CUDA devices are visible
    package:NAME        the Python distribution/module NAME can be imported
    cpu_flag:NAME       the CPU advertises flag NAME in /proc/cpuinfo (e.g. avx512_bf16); where
                        the flags cannot be read (not Linux) the requirement is unmet

An unmet requirement is a *skip* with a human reason ("no CUDA"), never a pass.  The probe of the
machine is lazy and cached: collection only parses, so ``pytest --collect-only`` never imports
torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_COMPARE_RE = re.compile(r"^(cuda_mem_gib|cuda_free_gib|gpus)\s*>=\s*(\d+(?:\.\d+)?)$")
# one top-level name: looking up a dotted name would import its parent package
_PACKAGE_RE = re.compile(r"^package:([A-Za-z_][\w\-]*)$")
_CPU_FLAG_RE = re.compile(r"^cpu_flag:([a-z0-9_]+)$")
CPUINFO = Path("/proc/cpuinfo")
GPU_KINDS = frozenset({"cuda", "cuda_mem_gib", "cuda_free_gib", "gpus"})


class RequirementError(ValueError):
    """A ``requires:`` entry that does not follow the grammar above."""


@dataclass(frozen=True)
class Requirement:
    kind: str  # "cpu", "cuda", "cuda_mem_gib", "cuda_free_gib", "gpus", "package" or "cpu_flag"
    value: float | str | None = None
    text: str = ""

    @property
    def needs_gpu(self) -> bool:
        return self.kind in GPU_KINDS


def parse_requirement(text: str) -> Requirement:
    entry = text.strip()
    if entry in ("cpu", "cuda"):
        return Requirement(entry, None, entry)
    m = _COMPARE_RE.match(entry)
    if m:
        return Requirement(m.group(1), float(m.group(2)), entry)
    m = _PACKAGE_RE.match(entry)
    if m:
        return Requirement("package", m.group(1), entry)
    if entry.startswith("package:") and "." in entry:
        raise RequirementError(
            f"{text!r}: a package requirement names one top-level package (no dots); nothing was imported"
        )
    m = _CPU_FLAG_RE.match(entry)
    if m:
        return Requirement("cpu_flag", m.group(1), entry)
    raise RequirementError(
        f"unknown requirement {text!r}; expected cpu, cuda, cuda_mem_gib>=N, cuda_free_gib>=N, gpus>=N, "
        "package:NAME or cpu_flag:NAME"
    )


def parse_requirements(entries: Iterable[str]) -> list[Requirement]:
    return [parse_requirement(e) for e in entries]


@dataclass
class Machine:
    """What this process can use, as far as ``requires:`` is concerned."""

    cuda: bool = False
    gpu_count: int = 0
    gpu_mem_gib: list[float] = field(default_factory=list)

    @classmethod
    def probe(cls) -> Machine:
        # torch is the arbiter: a GPU that torch cannot use does not satisfy `cuda`.
        if not cuda_present():
            return cls()
        # torch (and nvidia-ml-py) load only when a falsifier asks for a GPU: pv runs without them
        import torch

        count = torch.cuda.device_count()
        mems = [torch.cuda.get_device_properties(i).total_memory / 2**30 for i in range(count)]
        return cls(cuda=count > 0, gpu_count=count, gpu_mem_gib=mems)


@lru_cache(maxsize=1)
def current_machine() -> Machine:
    return Machine.probe()


def package_available(name: str) -> bool:
    # Distribution names use '-', module names '_'; accept either spelling.
    module = name.replace("-", "_")
    if not module.isidentifier():  # a dotted name would import its parent: never for a contract
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def read_cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str] | None:
    """The ``flags`` of the first processor in ``cpuinfo``, or None where it cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return None


def cuda_present() -> bool:
    """Whether torch, where it is installed, sees a CUDA device on this machine.

    Code under test can take that GPU without being asked (the engine's default device is the first
    GPU), so whether a checker may be forked depends on the machine, not only on ``requires:``.
    ``torch.cuda.is_available`` asks without creating a CUDA context.
    """
    if importlib.util.find_spec("torch") is None:
        return False
    # torch (and nvidia-ml-py) load only when a falsifier asks for a GPU: pv runs without them
    import torch

    return bool(torch.cuda.is_available())


@lru_cache(maxsize=1)
def current_cpu_flags() -> frozenset[str] | None:
    return read_cpu_flags()


def unmet_reason(req: Requirement, machine: Machine) -> str | None:
    """Why ``req`` is not met on ``machine``, or None when it is."""
    if req.kind == "cpu":
        return None
    if req.kind == "package":
        return None if package_available(str(req.value)) else f"missing package {req.value}"
    if req.kind == "cpu_flag":
        flags = current_cpu_flags()
        if flags is None:
            return f"needs CPU flag {req.value}: CPU flags are unknown on this machine (no flags in {CPUINFO})"
        return None if req.value in flags else f"CPU lacks flag {req.value}"
    if not machine.cuda:
        return "no CUDA"
    if req.kind == "gpus":
        need = float(req.value or 0)
        return None if machine.gpu_count >= need else f"needs {need:g} GPUs, found {machine.gpu_count}"
    if req.kind == "cuda_mem_gib":
        need = float(req.value or 0)
        have = machine.gpu_mem_gib[0] if machine.gpu_mem_gib else 0.0
        return None if have >= need else f"needs {need:g} GiB of GPU memory, found {have:.1f} GiB"
    if req.kind == "cuda_free_gib":
        need = float(req.value or 0)
        free = free_gpu_gib(0)
        if free is None:
            return f"needs {need:g} GiB of free GPU memory: free memory cannot be read on this machine"
        return None if free >= need else f"needs {need:g} GiB of free GPU memory, {free:.1f} GiB free"
    return None


def free_gpu_gib(index: int = 0) -> float | None:
    """Free memory of this process's CUDA device ``index`` in GiB, or None when nothing can tell.

    NVML first: it reads the device without creating a CUDA context.  The device is found by its
    UUID (from torch's device properties), so ``CUDA_VISIBLE_DEVICES`` and device ordering cannot
    make it read another GPU.  Without NVML, ``torch.cuda.mem_get_info``.
    """
    try:
        # torch (and nvidia-ml-py) load only when a falsifier asks for a GPU: pv runs without them
        import torch

        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            return None
        uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
    except Exception:
        return None
    free = _nvml_free_gib(uuid) if uuid else None
    if free is not None:
        return free
    try:
        free_bytes, _ = torch.cuda.mem_get_info(index)
    except Exception:
        return None
    return float(free_bytes) / 2**30


def _nvml_free_gib(uuid: str) -> float | None:
    try:
        # torch (and nvidia-ml-py) load only when a falsifier asks for a GPU: pv runs without them
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        handle = pynvml.nvmlDeviceGetHandleByUUID(name)
        return float(pynvml.nvmlDeviceGetMemoryInfo(handle).free) / 2**30
    except Exception:  # an NVML that cannot find the device (MIG, a driver mismatch): ask torch
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def wait_for_free_memory(
    entries: Iterable[str],
    timeout_s: float,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[str], bool, float]:
    """:func:`unmet_hardware`, polled for up to ``timeout_s`` while free GPU memory is all that is
    missing (another job may be about to release it); then the reasons, their kind, and the wait."""
    reqs = parse_requirements(entries)
    machine = _machine_for(reqs, None)
    start = clock()
    while True:
        unmet = _unmet(reqs, machine)
        reasons, hardware = _reasons_and_kind(unmet)
        free_only = bool(unmet) and all(r.kind == "cuda_free_gib" for r, _ in unmet)
        waited = clock() - start
        if not unmet or not free_only or waited >= timeout_s:
            if free_only and timeout_s > 0:
                reasons = [f"{why} after waiting {waited:.0f} s" for why in reasons]
            return reasons, hardware, waited
        sleep(min(poll_s, max(timeout_s - waited, 0.0)))


def unmet(entries: Iterable[str], machine: Machine | None = None) -> list[str]:
    """Reasons for every unmet requirement (empty when the falsifier can run).

    The machine is only probed when some entry needs it, so a CPU-only falsifier never pays for
    importing torch here.
    """
    return unmet_hardware(entries, machine)[0]


def unmet_hardware(entries: Iterable[str], machine: Machine | None = None) -> tuple[list[str], bool]:
    """:func:`unmet`'s reasons, and whether every one is a GPU requirement (``cuda``, ``gpus>=N``,
    ``cuda_mem_gib>=N``): only such a skip is a hardware skip that may back ACTIVE_ALGORITHM_LEVEL."""
    reqs = parse_requirements(entries)
    return _reasons_and_kind(_unmet(reqs, _machine_for(reqs, machine)))


def _machine_for(reqs: Iterable[Requirement], machine: Machine | None) -> Machine:
    """``machine``, else this one probed, but only when some requirement needs a GPU (no torch import)."""
    if machine is not None:
        return machine
    return current_machine() if any(r.needs_gpu for r in reqs) else Machine()


def _unmet(reqs: Iterable[Requirement], machine: Machine) -> list[tuple[Requirement, str]]:
    return [(r, why) for r in reqs if (why := unmet_reason(r, machine))]


def _reasons_and_kind(unmet: list[tuple[Requirement, str]]) -> tuple[list[str], bool]:
    return [why for _, why in unmet], bool(unmet) and all(r.needs_gpu for r, _ in unmet)


def needs_gpu(entries: Iterable[str]) -> bool:
    """True when any entry needs a GPU; malformed entries count as not needing one."""
    for e in entries:
        try:
            if parse_requirement(e).needs_gpu:
                return True
        except RequirementError:
            continue
    return False
