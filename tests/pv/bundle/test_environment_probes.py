"""The machine probes a bundle's environment records, each fed what a machine unlike this one shows:
an ARM board's /proc/cpuinfo, a model name holding a colon, bytes that are not UTF-8, NVML with a
discrete and an integrated GPU, a git whose status fails, a run started outside the repository."""

from __future__ import annotations

import builtins
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pv.bundle import environment
from pv.bundle.model import GpuInfo

GIB = 1024**3


def _cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes) -> None:
    fake = tmp_path / "cpuinfo"
    fake.write_bytes(content)
    real_open = builtins.open

    def reading(path: Any, *args: Any, **kwargs: Any) -> Any:
        return real_open(fake if path == "/proc/cpuinfo" else path, *args, **kwargs)

    monkeypatch.setattr(environment, "open", reading, raising=False)


@pytest.mark.parametrize(
    ("content", "model"),
    [
        (b"processor\t: 0\nmodel name\t: Xeon: Platinum @ 2.20GHz\n", "Xeon: Platinum @ 2.20GHz"),
        (b"processor\t: 0\nBogoMIPS\t: 38.40\nHardware\t: BCM2835\n", "BCM2835"),
        (b"processor\t: 0\nModel\t\t: Raspberry Pi 4\n", "Raspberry Pi 4"),
        (b"model name\t: Caf\xe9 CPU\n", "Caf\ufffd CPU"),  # a byte that is not UTF-8 is replaced, not fatal
    ],
)
def test_the_cpu_model_is_the_first_named_line_of_cpuinfo(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes, model: str
) -> None:
    _cpuinfo(monkeypatch, tmp_path, content)
    assert environment.cpu_model() == model


def test_memory_is_recorded_in_gib_to_two_places(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(
        cpu_count=lambda logical=True: 8 if logical else 4,
        virtual_memory=lambda: SimpleNamespace(total=int(23.4567 * GIB)),
    )
    monkeypatch.setitem(sys.modules, "psutil", fake)
    assert environment._cpu_counts() == (4, 8, 23.46)


class _Nvml:
    """NVML as pynvml shows it: a discrete GPU (name as bytes), an integrated one whose memory it
    cannot size (name as str), and a shutdown that fails."""

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes | str:
        return b"NVIDIA H200" if handle == 0 else "NVIDIA GB10"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        if handle == 1:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return SimpleNamespace(total=int(139.8123 * GIB))

    def nvmlShutdown(self) -> None:
        raise RuntimeError("NVML_ERROR_UNINITIALIZED")


def test_gpus_are_named_sized_and_classed_as_nvml_reports_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _Nvml())
    assert environment.gpus() == [
        GpuInfo(name="NVIDIA H200", memory_gib=139.81, memory_class="discrete"),
        GpuInfo(name="NVIDIA GB10", memory_gib=None, memory_class="integrated"),
    ]


def test_a_git_whose_status_fails_records_the_commit_and_no_dirty_flag(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    answers = {"rev-parse": "abc123\n", "status": None}
    monkeypatch.setattr(environment, "_git", lambda root, *args: answers[args[0]])
    assert environment.git_state(tmp_path) == ("abc123", None)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_environment_is_the_repository_s_whatever_folder_the_run_started_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "code.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "code"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(elsewhere)
    captured = environment.capture(repo)
    assert (captured.git_commit, captured.git_dirty) == (head, False)
