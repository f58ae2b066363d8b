"""Environment capture: git state, versions, and the GPU probe through a stand-in NVML."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pv.bundle import environment


class NVMLError(Exception):
    pass


def fake_nvml(devices: list[tuple[str, int | None]], *, init_fails: bool = False) -> types.ModuleType:
    """A module with the handful of pynvml calls the probe makes; memory None = unsupported."""
    mod = types.ModuleType("pynvml")

    def init() -> None:
        if init_fails:
            raise NVMLError("driver not loaded")

    def memory(handle: int) -> types.SimpleNamespace:
        total = devices[handle][1]
        if total is None:
            raise NVMLError("not supported")
        return types.SimpleNamespace(total=total)

    mod.nvmlInit = init  # type: ignore[attr-defined]
    mod.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCount = lambda: len(devices)  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    mod.nvmlDeviceGetName = lambda h: devices[h][0].encode()  # type: ignore[attr-defined]
    mod.nvmlDeviceGetMemoryInfo = memory  # type: ignore[attr-defined]
    return mod


def test_discrete_and_integrated_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([("NVIDIA H100 80GB HBM3", 80 << 30), ("NVIDIA GB10", None)]))
    h100, gb10 = environment.gpus()
    assert (h100.name, h100.memory_gib, h100.memory_class) == ("NVIDIA H100 80GB HBM3", 80.0, "discrete")
    assert (gb10.name, gb10.memory_gib, gb10.memory_class) == ("NVIDIA GB10", None, "integrated")
    assert environment.capture(Path.cwd()).gpu == "NVIDIA H100 80GB HBM3"


def test_no_driver_is_a_clean_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], init_fails=True))
    env = environment.capture(Path.cwd())
    assert env.gpus == [] and env.gpu == "none"


def test_versions_and_machine() -> None:
    env = environment.capture(Path.cwd())
    assert env.packages["pv-harness"] is not None and env.packages["pytest"] is not None
    assert environment.package_version("no-such-package-pv") is None
    assert env.python.count(".") == 2 and env.cpu_model and env.cpu_cores_logical


def test_git_commit_and_dirty_flag_ignore_the_evidence_folder(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert environment.git_state(tmp_path) == (None, None)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "c")
    commit, dirty = environment.git_state(tmp_path, [tmp_path / "evidence"])
    assert len(commit or "") == 40 and dirty is False
    (tmp_path / "evidence" / "c").mkdir(parents=True)
    (tmp_path / "evidence" / "c" / "bundle.json").write_text("{}")
    assert environment.git_state(tmp_path, [tmp_path / "evidence"])[1] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert environment.git_state(tmp_path, [tmp_path / "evidence"])[1] is True
