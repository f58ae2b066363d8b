from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from engine.device import (
    ADDRESSING_MODE_ATS,
    DEVICE_ENV,
    MEMORY_CLASS_ENV,
    DeviceError,
    classify_memory_class,
    gpu_memory_class,
    resolve_device,
)
from engine.faults import FAULTS

maybe_bool = st.one_of(st.none(), st.booleans())


@given(
    gpu_present=st.booleans(),
    override=st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["unified", "Discrete", " integrated "])),
    is_integrated=maybe_bool,
    addressing_mode=st.one_of(st.none(), st.integers(min_value=-5, max_value=10)),
    framebuffer=maybe_bool,
)
def test_classification_is_total_and_consistent(
    gpu_present: bool,
    override: str | None,
    is_integrated: bool | None,
    addressing_mode: int | None,
    framebuffer: bool | None,
) -> None:
    d = classify_memory_class(
        gpu_present=gpu_present,
        override=override,
        is_integrated=is_integrated,
        addressing_mode=addressing_mode,
        framebuffer_reported=framebuffer,
    )
    assert d.memory_class in ("integrated", "discrete", "none", "unknown")
    assert d.reason
    # "none" exactly when there is no GPU, whatever the other signals say.
    assert (d.memory_class == "none") == (not gpu_present)
    if gpu_present and override is not None and override.strip().lower() in ("unified", "integrated"):
        assert (d.memory_class, d.source) == ("integrated", "env")
    if gpu_present and override is not None and override.strip().lower() == "discrete":
        assert (d.memory_class, d.source) == ("discrete", "env")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"is_integrated": True}, "integrated"),
        ({"is_integrated": False, "framebuffer_reported": True}, "discrete"),
        ({"addressing_mode": ADDRESSING_MODE_ATS, "framebuffer_reported": True}, "integrated"),
        ({"framebuffer_reported": False}, "integrated"),
        ({}, "unknown"),
        ({"is_integrated": False, "override": "unified"}, "integrated"),
        ({"is_integrated": True, "override": "nonsense"}, "integrated"),
    ],
)
def test_classification_cases(kwargs: dict[str, object], expected: str) -> None:
    assert classify_memory_class(gpu_present=True, **kwargs).memory_class == expected  # type: ignore[arg-type]


def test_invalid_override_is_reported_not_silently_used() -> None:
    d = classify_memory_class(gpu_present=True, override="nonsense", is_integrated=False)
    assert d.memory_class == "discrete"
    assert "nonsense" in d.reason and "ignored" in d.reason


def test_fault_inverts_memory_class() -> None:
    with FAULTS.enabled("memory_class_inverted"):
        assert classify_memory_class(gpu_present=True, is_integrated=True).memory_class == "discrete"
        assert classify_memory_class(gpu_present=True, is_integrated=False).memory_class == "integrated"
        assert classify_memory_class(gpu_present=False).memory_class == "none"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU answer")
def test_probe_without_gpu_is_clean() -> None:
    report = gpu_memory_class(env={MEMORY_CLASS_ENV: "discrete"})
    assert not report.present
    assert report.memory_class == "none"
    assert "no GPU" in report.reason
    assert report.to_dict()["memory_class"] == "none"


def test_resolve_device_auto_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.device import mps_available, xpu_available

    monkeypatch.delenv(DEVICE_ENV, raising=False)
    auto = resolve_device()
    expected = (
        "cuda" if torch.cuda.is_available() else "xpu" if xpu_available() else "mps" if mps_available() else "cpu"
    )
    assert auto.type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "tpu-ish")
    with pytest.raises(DeviceError, match=DEVICE_ENV):
        resolve_device()
    with FAULTS.enabled("pv_device_env_ignored"):
        assert resolve_device().type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU-only machine")
def test_cuda_request_without_cuda_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    with pytest.raises(DeviceError, match="no CUDA"):
        resolve_device("cuda")
    monkeypatch.setenv(DEVICE_ENV, "cuda:0")
    with pytest.raises(DeviceError, match=DEVICE_ENV):
        resolve_device()


@pytest.mark.parametrize("kind", ["mps", "xpu"])
def test_mps_and_xpu_are_accepted_where_torch_offers_them(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    import engine.device as device

    monkeypatch.delenv(DEVICE_ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, f"{kind}_available", lambda: True)
    assert resolve_device(kind) == torch.device(kind)
    assert resolve_device().type == kind  # auto: the accelerator torch offers, not the CPU
    monkeypatch.setattr(device, f"{kind}_available", lambda: False)
    with pytest.raises(DeviceError, match=f"asks for {kind}"):
        resolve_device(kind)


def test_nf4_work_falls_back_to_the_cpu_where_bitsandbytes_has_no_kernels() -> None:
    from engine.device import nf4_device

    assert nf4_device(torch.device("cpu")) == torch.device("cpu")
    assert nf4_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    for kind in ("mps", "xpu"):
        with pytest.warns(RuntimeWarning, match=f"no NF4 kernels for {kind}"):
            assert nf4_device(torch.device(kind)) == torch.device("cpu")
