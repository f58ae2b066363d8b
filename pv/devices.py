"""One GPU per pytest-xdist worker: ``gwK`` sees device ``K mod len(devices)`` and nothing else.

Under ``pytest -n N`` on a machine with several GPUs, each worker gets its own
``CUDA_VISIBLE_DEVICES`` before any test module (or torch) touches CUDA, so falsifiers spread
over the cards instead of piling onto ``cuda:0``.  With one GPU every worker shares it; with
none every worker is pinned to the CPU and a GPU-gated falsifier there is skipped with the
worker's name in the reason.

The device list comes from, in order:

1. ``PV_DEVICES``: ``"0,1,2,3"`` (any ``CUDA_VISIBLE_DEVICES`` spelling, UUIDs included), or
   ``""`` / ``none`` / ``cpu`` for no GPU.  This is also how tests fake a machine.
2. ``CUDA_VISIBLE_DEVICES`` of the process that started pytest: a subset the user already chose.
3. NVML's device count (``nvidia-ml-py``), numbered in PCI bus order; the worker then gets
   ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that CUDA numbers the cards the way NVML and
   ``nvidia-smi`` do.  Where NVML cannot answer, the list is unknown and nothing is pinned.

The decision is the pure function :func:`plan`; :func:`apply` writes it into an environment.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

DEVICES_ENV = "PV_DEVICES"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
ORDER_ENV = "CUDA_DEVICE_ORDER"
PINNED_ENV = "PV_PINNED_DEVICE"  # what the worker got: "cuda:<id>" or "cpu"
PINNED_FOR_ENV = "PV_PINNED_FOR"  # "<testrunuid>:<worker>": a nested pytest run pins its own workers
WORKER_ENV = "PYTEST_XDIST_WORKER"
RUN_ENV = "PYTEST_XDIST_TESTRUNUID"
CPU = "cpu"
_NO_DEVICES = frozenset({"", "none", "cpu", "-1"})
_WORKER_RE = re.compile(r"^gw(\d+)$")


def parse_device_list(text: str) -> tuple[str, ...]:
    """``"0, 1"`` -> ``("0", "1")``; the spellings of "no GPU" give ``()``.

    CUDA stops reading ``CUDA_VISIBLE_DEVICES`` at the first invalid entry (``-1`` hides every
    device), so the list is cut there too.
    """
    if text.strip().lower() in _NO_DEVICES:
        return ()
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part or part.startswith("-"):
            break
        out.append(part)
    return tuple(out)


def nvml_device_count() -> int | None:
    """How many GPUs NVML reports, or None when it cannot tell (no library, no driver)."""
    try:
        # optional: nvidia-ml-py is installed on GPU machines only
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver library, driver not loaded: unknown, so that nothing is hidden
        return None
    try:
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


@dataclass(frozen=True)
class DeviceList:
    devices: tuple[str, ...] | None  # None: unknown, do not pin
    source: str  # "PV_DEVICES", "CUDA_VISIBLE_DEVICES", "nvml" or "unknown"


def available_devices(
    environ: Mapping[str, str] | None = None, count: Callable[[], int | None] = nvml_device_count
) -> DeviceList:
    """The GPUs the workers share out, from the environment, else from ``count()`` (NVML)."""
    env = os.environ if environ is None else environ
    if DEVICES_ENV in env:
        return DeviceList(parse_device_list(env[DEVICES_ENV]), DEVICES_ENV)
    if VISIBLE_ENV in env:
        return DeviceList(parse_device_list(env[VISIBLE_ENV]), VISIBLE_ENV)
    n = count()
    if n is None:
        return DeviceList(None, "unknown")
    return DeviceList(tuple(str(i) for i in range(n)), "nvml")


def worker_index(worker_id: str) -> int:
    """``"gw3"`` -> 3; anything else is not an xdist worker id."""
    m = _WORKER_RE.match(worker_id)
    if m is None:
        raise ValueError(f"{worker_id!r} is not a pytest-xdist worker id (gw0, gw1, ...)")
    return int(m.group(1))


def device_for_worker(worker_id: str, devices: Sequence[str]) -> str | None:
    """The device of worker ``gwK``: ``devices[K % len(devices)]``, or None (CPU) when there are none."""
    if not devices:
        return None
    return devices[worker_index(worker_id) % len(devices)]


@dataclass(frozen=True)
class Pinning:
    """What one worker was given, and the environment variables that give it."""

    worker: str
    device: str | None  # the device's id in the starting process's numbering; None: CPU only
    env: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``cuda:<id>`` (the id as the starting process numbers the cards) or ``cpu``."""
        return CPU if self.device is None else f"cuda:{self.device}"

    @property
    def has_gpu(self) -> bool:
        return self.device is not None


def _pinned_for(environ: Mapping[str, str], worker_id: str) -> str:
    return f"{environ.get(RUN_ENV, '')}:{worker_id}"


def plan(worker_id: str, listing: DeviceList, environ: Mapping[str, str] | None = None) -> Pinning | None:
    """The pinning for ``worker_id``, or None when the device list is unknown (leave the worker as it is)."""
    if listing.devices is None:
        return None
    env = os.environ if environ is None else environ
    device = device_for_worker(worker_id, listing.devices)
    changes = {VISIBLE_ENV: device if device is not None else ""}
    if device is not None and listing.source == "nvml" and ORDER_ENV not in env:
        changes[ORDER_ENV] = "PCI_BUS_ID"  # NVML's order; CUDA's default is fastest-first
    pinning = Pinning(worker_id, device)
    changes[PINNED_ENV] = pinning.label
    changes[PINNED_FOR_ENV] = _pinned_for(env, worker_id)
    return Pinning(worker_id, device, changes)


def apply(pinning: Pinning, environ: MutableMapping[str, str] | None = None) -> None:
    env = os.environ if environ is None else environ
    env.update(pinning.env)


def pin_this_worker(
    environ: MutableMapping[str, str] | None = None, count: Callable[[], int | None] = nvml_device_count
) -> Pinning | None:
    """Pin the current xdist worker (idempotent); None outside a worker or when nothing is known.

    Must run before CUDA is initialised in the process: CUDA reads ``CUDA_VISIBLE_DEVICES`` once.
    """
    env = os.environ if environ is None else environ
    worker = env.get(WORKER_ENV)
    if not worker or _WORKER_RE.match(worker) is None:
        return None
    if env.get(PINNED_FOR_ENV) == _pinned_for(env, worker):
        return current_pinning(env)
    pinning = plan(worker, available_devices(env, count), env)
    if pinning is not None:
        apply(pinning, env)
    return pinning


def current_pinning(environ: Mapping[str, str] | None = None) -> Pinning | None:
    """The pinning :func:`pin_this_worker` applied to this process, if any."""
    env = os.environ if environ is None else environ
    label = env.get(PINNED_ENV)
    worker = env.get(WORKER_ENV, "")
    if label is None:
        return None
    device = None if label == CPU else label.removeprefix("cuda:")
    return Pinning(worker, device)


def gpu_gate(needs_gpu: bool, pinning: Pinning | None) -> str | None:
    """Why a GPU-gated falsifier may not run on this worker, or None when it may."""
    if needs_gpu and pinning is not None and not pinning.has_gpu:
        return f"no CUDA: worker {pinning.worker or '?'} is pinned to the CPU (no GPU to share out)"
    return None


def device_label(needs_gpu: bool, pinning: Pinning | None) -> str:
    """The device to record for a falsifier: its worker's GPU when it needs one, else ``cpu``."""
    if not needs_gpu:
        return CPU
    if pinning is not None and pinning.has_gpu:
        return pinning.label
    return "cuda"


__all__ = [
    "DEVICES_ENV",
    "PINNED_ENV",
    "DeviceList",
    "Pinning",
    "apply",
    "available_devices",
    "current_pinning",
    "device_for_worker",
    "device_label",
    "gpu_gate",
    "nvml_device_count",
    "parse_device_list",
    "pin_this_worker",
    "plan",
    "worker_index",
]
