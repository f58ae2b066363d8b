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


def test_every_field_of_the_capture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import platform

    import psutil

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([("NVIDIA L4", 24 << 30)]))
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8 if logical else 4)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(total=int(15.5 * (1 << 30))))
    monkeypatch.setattr(environment, "git_state", lambda root, exclude=(): ("c" * 40, True))
    monkeypatch.setattr(environment, "cpu_model", lambda: "Test CPU")
    env = environment.capture(tmp_path)
    assert (env.git_commit, env.git_dirty, env.cpu_model) == ("c" * 40, True, "Test CPU")
    assert (env.cpu_cores_physical, env.cpu_cores_logical, env.memory_gib) == (4, 8, 15.5)
    assert env.gpu == "NVIDIA L4" and [(g.name, g.memory_gib) for g in env.gpus] == [("NVIDIA L4", 24.0)]
    assert env.python == platform.python_version() and env.machine == platform.machine()
    assert env.implementation == f"{platform.python_implementation()} {sys.version.split()[0]}"
    assert env.os == f"{platform.system()} {platform.release()}"
    assert list(env.packages) == list(environment.PACKAGES)


def test_the_cpu_model_from_cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    real_open = builtins.open
    texts = {
        "x86": "processor\t: 0\nvendor_id\t: x\nmodel name\t: Some CPU @ 2GHz\n",
        "arm": "processor\t: 0\nHardware\t: \nModel\t: Raspberry Pi 5\n",
        "none": "processor\t: 0\n",
    }
    for kind, text in texts.items():
        path = tmp_path / kind
        path.write_text(text)
        monkeypatch.setattr(
            builtins, "open", lambda f, *a, _p=path, **k: real_open(_p if f == "/proc/cpuinfo" else f, *a, **k)
        )
        expected = {"x86": "Some CPU @ 2GHz", "arm": "Raspberry Pi 5"}.get(kind)
        got = environment.cpu_model()
        assert got == (expected or environment.platform.processor() or environment.platform.machine()), kind
    monkeypatch.setattr(builtins, "open", lambda *a, **k: (_ for _ in ()).throw(OSError("no /proc")))
    monkeypatch.setattr(environment.platform, "processor", lambda: "")
    monkeypatch.setattr(environment.platform, "machine", lambda: "")
    assert environment.cpu_model() == "unknown"


def test_a_gpu_probe_that_fails_midway_keeps_what_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_nvml([("NVIDIA A", 8 << 30), ("NVIDIA B", 8 << 30)])
    names = iter([b"NVIDIA A"])
    mod.nvmlDeviceGetName = lambda h: next(names)  # type: ignore[attr-defined]  # the second raises StopIteration
    shut: list[bool] = []
    mod.nvmlShutdown = lambda: shut.append(True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    assert [g.name for g in environment.gpus()] == ["NVIDIA A"] and shut == [True]
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert environment.gpus() == []


def test_git_state_excludes_only_paths_inside_the_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    def fake(root: Path, *args: str) -> str | None:
        calls.append(args)
        return "abc\n" if args[0] == "rev-parse" else " M x.py\n"

    monkeypatch.setattr(environment, "_git", fake)
    assert environment.git_state(tmp_path, [tmp_path / "evidence", tmp_path.parent / "outside"]) == ("abc", True)
    assert calls[1] == ("status", "--porcelain", "--", ".", ":(exclude)evidence")
