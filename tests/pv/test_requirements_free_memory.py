"""`requires: [cuda_free_gib>=N]`: free GPU memory read at run time, waited for, or a hardware skip."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

import pv.requirements
from pv.requirements import Machine, needs_gpu, parse_requirement, unmet, wait_for_free_memory
from tests.pv.toy import ToyProject, falsifier

ONE_GPU = Machine(cuda=True, gpu_count=1, gpu_mem_gib=[80.0])


def _free_sequence(monkeypatch: pytest.MonkeyPatch, values: list[float | None]) -> list[int]:
    """Make free_gpu_gib answer ``values`` in turn (the last one from then on); returns the call log."""
    calls: list[int] = []

    def free(index: int = 0) -> float | None:
        calls.append(index)
        return values[min(len(calls) - 1, len(values) - 1)]

    monkeypatch.setattr(pv.requirements, "free_gpu_gib", free)
    monkeypatch.setattr(pv.requirements, "current_machine", lambda: ONE_GPU)
    return calls


def test_parse_and_kind() -> None:
    req = parse_requirement("cuda_free_gib >= 7.5")
    assert (req.kind, req.value, req.needs_gpu) == ("cuda_free_gib", 7.5, True)
    assert needs_gpu(["cuda_free_gib>=8"])


@pytest.mark.parametrize(
    ("free", "reasons"),
    [
        (12.0, []),
        (3.25, ["needs 8 GiB of free GPU memory, 3.2 GiB free"]),
        (None, ["needs 8 GiB of free GPU memory: free memory cannot be read on this machine"]),
    ],
)
def test_free_memory_is_read_when_the_falsifier_is_about_to_run(
    monkeypatch: pytest.MonkeyPatch, free: float | None, reasons: list[str]
) -> None:
    _free_sequence(monkeypatch, [free])
    assert unmet(["cuda_free_gib>=8"], ONE_GPU) == reasons
    assert unmet(["cuda_free_gib>=8"], Machine()) == ["no CUDA"]  # no GPU at all: not a memory question


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_waiting_ends_as_soon_as_the_memory_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _free_sequence(monkeypatch, [2.0, 2.0, 9.0])
    clock = FakeClock()
    reasons, hardware, waited = wait_for_free_memory(["cuda_free_gib>=8"], 60, poll_s=5, clock=clock, sleep=clock.sleep)
    assert (reasons, waited, clock.slept, len(calls)) == ([], 10.0, [5, 5], 3)
    assert hardware is False  # nothing unmet


def test_waiting_is_bounded_and_the_skip_says_how_long(monkeypatch: pytest.MonkeyPatch) -> None:
    _free_sequence(monkeypatch, [2.0])
    clock = FakeClock()
    reasons, hardware, waited = wait_for_free_memory(["cuda_free_gib>=8"], 12, poll_s=5, clock=clock, sleep=clock.sleep)
    assert clock.slept == [5, 5, 2] and waited == 12
    assert reasons == ["needs 8 GiB of free GPU memory, 2.0 GiB free after waiting 12 s"] and hardware is True


def test_no_wait_for_what_waiting_cannot_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    _free_sequence(monkeypatch, [2.0])
    clock = FakeClock()
    reasons, hardware, _ = wait_for_free_memory(
        ["cuda_free_gib>=8", "package:surely_not_installed_pkg"], 60, clock=clock, sleep=clock.sleep
    )
    assert clock.slept == [] and hardware is False and len(reasons) == 2


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    """A pynvml that knows one device by UUID; records what it was asked."""
    seen: dict[str, object] = {"shutdown": 0}

    class NVMLError(Exception):
        pass

    def by_uuid(uuid: str) -> str:
        seen["uuid"] = uuid
        if uuid != "GPU-1234":
            raise NVMLError("not found")
        return "handle"

    def shutdown() -> None:
        seen["shutdown"] = int(seen["shutdown"]) + 1  # type: ignore[call-overload]

    module = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlShutdown=shutdown,
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetMemoryInfo=lambda handle: types.SimpleNamespace(free=6 * 2**30, total=80 * 2**30),
    )
    monkeypatch.setitem(sys.modules, "pynvml", module)
    yield seen


def test_nvml_reads_the_device_torch_means_by_its_uuid(fake_nvml: dict[str, object]) -> None:
    assert pv.requirements._nvml_free_gib("1234") == 6.0
    assert fake_nvml["uuid"] == "GPU-1234" and fake_nvml["shutdown"] == 1
    assert pv.requirements._nvml_free_gib("GPU-9999") is None  # unknown to NVML: torch is asked instead
    assert fake_nvml["shutdown"] == 2


def test_on_a_machine_without_cuda_nothing_is_read() -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert pv.requirements.free_gpu_gib() is None


def test_the_plugin_waits_then_runs_or_skips_as_hardware(toy: ToyProject, monkeypatch: pytest.MonkeyPatch) -> None:
    toy.contract(
        "alpha",
        [
            falsifier(
                "FALSIFY-ALPHA-001",
                check="toyfalsifiers.basic:measure",
                expect="value == 1",
                requires=["cuda_free_gib>=8"],
            )
        ],
    )
    monkeypatch.setattr(pv.requirements.time, "sleep", lambda s: None)
    _free_sequence(monkeypatch, [1.0])
    toy.pytester.runpytest().assert_outcomes(skipped=1)
    (entry,) = toy.run_record()["results"]
    assert entry["skip_reason"] == "needs 8 GiB of free GPU memory, 1.0 GiB free"
    assert entry["skip_kind"] == "hardware"

    _free_sequence(monkeypatch, [1.0, 1.0, 20.0])  # freed while the falsifier waits
    toy.pytester.runpytest("--pv-vram-wait", "30").assert_outcomes(passed=1)
    bad = toy.pytester.runpytest("--pv-vram-wait", "-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
