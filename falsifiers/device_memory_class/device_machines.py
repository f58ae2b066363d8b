"""Which device ``resolve_device`` picks, or how it refuses, on machines this one is not.

FALSIFY-DEVICE-005 works its expectations out from this machine's own flags, so on a CPU-only
machine the CUDA, XPU and MPS branches never run.  Here torch's availability calls
(``torch.cuda.is_available``, ``torch.cuda.device_count``, ``torch.xpu.is_available``,
``torch.backends.mps.is_available``) are stood in for by five machines: two CUDA GPUs, an XPU, an
Apple MPS backend, CUDA and MPS together, and nothing.  Each request's answer is compared with the
device or the refusal written out here, word for word.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from unittest import mock

import torch

from engine.device import DeviceError, resolve_device
from falsifiers.device_memory_class.device_choice import _env
from pv.checkers import checker

NO_CUDA = "but torch sees no CUDA device on this machine"


@contextmanager
def _machine(cuda: int = 0, xpu: bool = False, mps: bool = False, env: str | None = None) -> Iterator[None]:
    """torch as a machine with ``cuda`` CUDA devices, an XPU or not, MPS or not, and PV_DEVICE."""
    with (
        _env(env),
        mock.patch.object(torch.cuda, "is_available", lambda: cuda > 0),
        mock.patch.object(torch.cuda, "device_count", lambda: cuda),
        mock.patch.object(torch, "xpu", SimpleNamespace(is_available=lambda: xpu), create=True),
        mock.patch.object(torch.backends, "mps", SimpleNamespace(is_available=lambda: mps), create=True),
    ):
        yield


# (machine, request, PV_DEVICE, the device or the refusal's words)
CASES: list[tuple[dict[str, Any], str | None, str | None, str]] = [
    ({"cuda": 2}, None, None, "cuda"),
    ({"cuda": 2}, "cuda", None, "cuda"),
    ({"cuda": 2}, "cuda:1", None, "cuda:1"),
    ({"cuda": 2}, "cuda:2", None, "argument asks for cuda:2 but only 2 CUDA device(s) exist"),
    ({"cuda": 2}, None, "cuda:5", "PV_DEVICE asks for cuda:5 but only 2 CUDA device(s) exist"),
    ({"cuda": 2, "mps": True}, None, None, "cuda"),
    ({"cuda": 2}, "mps", None, "argument asks for mps but this torch build or machine has no MPS backend"),
    ({"xpu": True}, None, None, "xpu"),
    ({"xpu": True, "mps": True}, None, None, "xpu"),
    ({"xpu": True}, "xpu:0", None, "xpu:0"),
    ({"mps": True}, None, None, "mps"),
    ({"mps": True}, "mps", None, "mps"),
    ({"mps": True}, "cuda:0", None, f"argument asks for cuda:0 {NO_CUDA}"),
    ({}, None, None, "cpu"),
    ({}, "cuda", None, f"argument asks for cuda {NO_CUDA}"),
    ({}, None, "cuda", f"PV_DEVICE asks for cuda {NO_CUDA}"),
    ({}, "xpu:0", None, "argument asks for xpu:0 but torch sees no XPU device on this machine"),
]


@checker(observes=["cases", "differing"], ids=["FALSIFY-DEVICE-009"])
def resolve_device_on_stood_in_machines() -> dict[str, Any]:
    """resolve_device for 17 requests on five stood-in machines."""

    differing: list[str] = []
    for machine, request, env, want in CASES:
        with _machine(**machine, env=env):
            try:
                got = str(resolve_device(request))
            except DeviceError as exc:
                got = str(exc)
            except Exception as exc:  # anything else is not a clean refusal
                got = f"{type(exc).__name__}: {exc}"
        if got != want:
            differing.append(f"{machine} {request!r} PV_DEVICE={env!r}: {got!r}, not {want!r}")
    return {"cases": len(CASES), "differing": differing}
