"""The GPU memory-class decision, every field of it, for every kind of answer the probes give.

FALSIFY-DEVICE-001 holds the class a decision names.  A user reading a device report also reads
which probe decided (``source``: the override, torch's CUDA properties, NVML, or none) and why
(``reason``), including why an override was ignored.  Here the whole decision is compared with a
table written out from the documented rules: no GPU; an override in each spelling, padded and in
capitals; an override nobody knows beside each probe's answer; CUDA's integrated flag; NVML's
addressing mode (the values of nvml.h's nvmlDeviceAddressingModeType, written out below) and
framebuffer; and no answer at all.
"""

from __future__ import annotations

from typing import Any

from engine.device import classify_memory_class
from pv.checkers import checker

ENV = "PV_GPU_MEMORY_CLASS"
SPELLINGS = {"integrated": "integrated", "unified": "integrated", "shared": "integrated"}
SPELLINGS |= {"discrete": "discrete", "dedicated": "discrete"}
KNOWN = ", ".join(sorted(SPELLINGS))
OWN = "device has its own framebuffer memory"
# nvml.h: NVML_DEVICE_ADDRESSING_MODE_NONE = 0, _HMM = 1, _ATS = 2
NVML_ADDRESSING_MODE_HMM, NVML_ADDRESSING_MODE_ATS = 1, 2


def _table(ats: int, hmm: int) -> list[tuple[dict[str, Any], tuple[str, str, str]]]:
    """(classify_memory_class keywords, (class, source, reason)) for each case."""
    rows: list[tuple[dict[str, Any], tuple[str, str, str]]] = [
        ({"gpu_present": False}, ("none", "none", "no GPU")),
        (
            {"gpu_present": False, "override": "integrated"},
            ("none", "none", f"no GPU ({ENV}='integrated' ignored: nothing to classify)"),
        ),
        ({"gpu_present": False, "override": ""}, ("none", "none", "no GPU")),
    ]
    for spelling, memory_class in SPELLINGS.items():
        written = f"  {spelling.upper()} "
        rows.append(
            ({"gpu_present": True, "override": written, "is_integrated": memory_class != "integrated"},
             (memory_class, "env", f"{ENV}={written!r}"))
        )  # fmt: skip
    for override, ignored in ((None, ""), ("   ", ""), ("gpu", f"; {ENV}='gpu' is not one of {KNOWN}, ignored")):
        probes: list[tuple[dict[str, Any], tuple[str, str, str]]] = [
            ({"is_integrated": True}, ("integrated", "torch", "CUDA reports an integrated device")),
            ({"addressing_mode": ats}, ("integrated", "nvml", "NVML addressing mode ATS (coherent unified memory)")),
            ({"framebuffer_reported": False}, ("integrated", "nvml", "NVML reports no framebuffer of its own")),
            ({"is_integrated": False}, ("discrete", "torch", OWN)),
            ({"is_integrated": False, "addressing_mode": hmm}, ("discrete", "torch", OWN)),
            ({"framebuffer_reported": True}, ("discrete", "nvml", OWN)),
            ({}, ("unknown", "none", "GPU present but neither CUDA nor NVML said how its memory is attached")),
        ]
        for given, (memory_class, source, reason) in probes:
            rows.append(
                ({"gpu_present": True, "override": override, **given}, (memory_class, source, reason + ignored))
            )
    return rows


@checker(observes=["cases", "decisions_differing", "differing"], ids=["FALSIFY-DEVICE-006"])
def memory_class_decisions() -> dict[str, Any]:
    """classify_memory_class on each row of the table above: class, source and reason."""

    rows = _table(NVML_ADDRESSING_MODE_ATS, NVML_ADDRESSING_MODE_HMM)
    differing = []
    for given, want in rows:
        d = classify_memory_class(**given)
        if (d.memory_class, d.source, d.reason) != want:
            differing.append(f"{given}: {(d.memory_class, d.source, d.reason)} != {want}")
    return {"cases": len(rows), "decisions_differing": len(differing), "differing": differing}
