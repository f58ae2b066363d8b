"""GPU memory class: total over NVML's answers, the override wins, no GPU is a clean answer.

The CPU checkers drive :func:`engine.device.gpu_memory_class` against a scripted stand-in for the
``pynvml`` module (the only way to present NVML answers of hardware this machine lacks), with
torch told that no CUDA device exists, so NVML alone speaks.  :func:`real_gpu_class` asks the
real NVML on a GPU machine.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import torch
from hypothesis import strategies as st

from engine.device import ADDRESSING_MODE_ATS, classify_memory_class, gpu_memory_class
from pv.checkers import checker

CLASSES = ("none", "integrated", "discrete", "unknown")
OVERRIDES = {
    "integrated": "integrated",
    "unified": "integrated",
    "shared": "integrated",
    "discrete": "discrete",
    "dedicated": "discrete",
}
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_LIBRARY_NOT_FOUND = 12


class FakeNVMLError(Exception):
    """Shaped like ``pynvml.NVMLError``: the error code is in ``value``."""

    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


@dataclass(frozen=True)
class NvmlScenario:
    """What a machine's NVML answers.  ``memory`` is "ok", "not_supported" or "error"."""

    init_fails: bool = False
    device_count: int = 1
    name: str | bytes = "NVIDIA H100 80GB HBM3"
    name_fails: bool = False
    memory: str = "ok"
    total_bytes: int = 80 * 2**30
    addressing_mode: int | None = 0  # None: the call is missing (older drivers)


def fake_pynvml(s: NvmlScenario) -> types.ModuleType:
    """A module with the handful of ``pynvml`` calls the engine makes, answering as ``s`` says."""
    mod = types.ModuleType("pynvml")

    def init() -> None:
        if s.init_fails:
            raise FakeNVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)

    def name(handle: object) -> str | bytes:
        if s.name_fails:
            raise FakeNVMLError(999)
        return s.name

    def memory(handle: object) -> Any:
        if s.memory == "not_supported":
            raise FakeNVMLError(NVML_ERROR_NOT_SUPPORTED)
        if s.memory == "error":
            raise FakeNVMLError(999)
        return types.SimpleNamespace(total=s.total_bytes, free=s.total_bytes, used=0)

    def addressing(handle: object) -> int:
        if s.addressing_mode is None:
            raise AttributeError("nvmlDeviceGetAddressingMode")
        return s.addressing_mode

    attrs: dict[str, Any] = {
        "NVMLError": FakeNVMLError,
        "NVML_ERROR_NOT_SUPPORTED": NVML_ERROR_NOT_SUPPORTED,
        "nvmlInit": init,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: s.device_count,
        "nvmlDeviceGetHandleByIndex": lambda index: ("handle", index),
        "nvmlDeviceGetName": name,
        "nvmlDeviceGetMemoryInfo": memory,
        "nvmlDeviceGetAddressingMode": addressing,
    }
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


@contextlib.contextmanager
def nvml_answers(module: types.ModuleType | None) -> Iterator[None]:
    """``import pynvml`` gives ``module`` (None: the import fails) and torch sees no CUDA device."""
    with mock.patch.dict(sys.modules, {"pynvml": module}), mock.patch.object(torch.cuda, "is_available", lambda: False):
        yield


def expected_class(
    gpu_present: bool,
    override: str | None,
    is_integrated: bool | None,
    addressing_mode: int | None,
    framebuffer_reported: bool | None,
) -> str:
    """The contract's rule, written out independently of the engine."""
    if not gpu_present:
        return "none"
    key = (override or "").strip().lower()
    if key in OVERRIDES:
        return OVERRIDES[key]
    if is_integrated is True or addressing_mode == ADDRESSING_MODE_ATS or framebuffer_reported is False:
        return "integrated"
    if is_integrated is False or framebuffer_reported is True:
        return "discrete"
    return "unknown"


def scenario_signals(s: NvmlScenario) -> tuple[bool, int | None, bool | None]:
    """(GPU present, addressing mode, framebuffer reported) as NVML's answers imply them."""
    present = not s.init_fails and s.device_count > 0 and not s.name_fails
    framebuffer = {"ok": s.total_bytes > 0, "not_supported": False, "error": None}[s.memory]
    return present, s.addressing_mode, framebuffer


_override = st.one_of(
    st.none(),
    st.sampled_from([*OVERRIDES, " Unified ", "DISCRETE", "", "igpu", "auto"]),
    st.text(max_size=10),
)
_mode = st.one_of(st.none(), st.integers(min_value=-2, max_value=6))
_maybe_bool = st.one_of(st.none(), st.booleans())
_scenario = st.builds(
    NvmlScenario,
    init_fails=st.booleans(),
    device_count=st.integers(min_value=0, max_value=2),
    name=st.sampled_from(["NVIDIA H100 80GB HBM3", b"NVIDIA GB10", "Orin (nvgpu)"]),
    name_fails=st.booleans(),
    memory=st.sampled_from(["ok", "not_supported", "error"]),
    total_bytes=st.sampled_from([0, 16 * 2**30, 141 * 2**30]),
    addressing_mode=_mode,
)


@checker(observes=["examples_tried", "counterexamples", "examples_replayed"], ids=["FALSIFY-DEVICE-001"])
def classification_total(pv_hypothesis: Any) -> dict[str, Any]:
    """Two searches: the pure decision over all its inputs, then the NVML probe over scripted answers.

    A property fails when the engine raises, answers outside the four classes, or answers other
    than :func:`expected_class`.
    """
    tried = 0

    def decision(
        gpu_present: bool, override: str | None, is_integrated: bool | None, mode: int | None, fb: bool | None
    ) -> None:
        nonlocal tried
        tried += 1
        got = classify_memory_class(
            gpu_present=gpu_present,
            override=override,
            is_integrated=is_integrated,
            addressing_mode=mode,
            framebuffer_reported=fb,
        ).memory_class
        want = expected_class(gpu_present, override, is_integrated, mode, fb)
        assert got in CLASSES and got == want, f"classified {got!r}, the rule says {want!r}"

    def probe(scenario: NvmlScenario, override: str | None) -> None:
        nonlocal tried
        tried += 1
        env = {} if override is None else {"PV_GPU_MEMORY_CLASS": override}
        with nvml_answers(fake_pynvml(scenario)):
            report = gpu_memory_class(0, env=env)
        present, mode, fb = scenario_signals(scenario)
        want = expected_class(present, override, None, mode, fb)
        assert report.present == present, f"present={report.present}, NVML's answers say {present}"
        assert report.memory_class == want, f"classified {report.memory_class!r}, the rule says {want!r}"

    first = pv_hypothesis.run(
        decision, gpu_present=st.booleans(), override=_override, is_integrated=_maybe_bool, mode=_mode, fb=_maybe_bool
    )
    second = pv_hypothesis.run(probe, scenario=_scenario, override=_override)
    return {
        "examples_tried": tried,
        "counterexamples": first["counterexamples"] + second["counterexamples"],
        "examples_replayed": first["examples_replayed"] + second["examples_replayed"],
    }


@checker(observes=["overrides_tried", "overrides_respected"], ids=["FALSIFY-DEVICE-002"])
def override_respected() -> dict[str, Any]:
    """Set the override against what NVML says: integrated on a discrete card, discrete on an ATS part."""
    cases = [
        (NvmlScenario(addressing_mode=0), "integrated"),
        (NvmlScenario(name="NVIDIA GH200", addressing_mode=ADDRESSING_MODE_ATS), "discrete"),
    ]
    respected = 0
    for scenario, wanted in cases:
        with nvml_answers(fake_pynvml(scenario)):
            report = gpu_memory_class(0, env={"PV_GPU_MEMORY_CLASS": wanted})
        respected += int(report.memory_class == wanted)
    return {"overrides_tried": len(cases), "overrides_respected": respected}


@checker(observes=["clean_no_gpu", "cases_tried", "cases_clean"], ids=["FALSIFY-DEVICE-003"])
def no_gpu_clean() -> dict[str, Any]:
    """No ``pynvml`` at all, an NVML library that fails to initialise, and NVML with zero devices."""
    cases: list[types.ModuleType | None] = [
        None,
        fake_pynvml(NvmlScenario(init_fails=True)),
        fake_pynvml(NvmlScenario(device_count=0)),
    ]
    clean = 0
    for module in cases:
        try:
            with nvml_answers(module):
                report = gpu_memory_class(0, env={})
        except Exception:
            continue
        clean += int(not report.present and report.memory_class == "none" and bool(report.reason))
    return {"clean_no_gpu": int(clean == len(cases)), "cases_tried": len(cases), "cases_clean": clean}


@checker(observes=["is_discrete", "gpu_present", "nvml_answered"], ids=["FALSIFY-DEVICE-004"])
def real_gpu_class() -> dict[str, Any]:
    """The real NVML's answer for GPU 0, with any override in the environment ignored."""
    report = gpu_memory_class(0, env={})
    return {
        "is_discrete": int(report.memory_class == "discrete"),
        "gpu_present": int(report.present),
        "nvml_answered": int(report.nvml),
    }
