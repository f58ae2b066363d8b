"""Capture of the environment a run measured in: versions, code commit, CPU and GPU.

Nothing heavy is imported: package versions come from installed metadata, the GPU from NVML
(nvidia-ml-py) when it is installed and a driver answers.  Every probe degrades to a clean
"none"/null instead of failing the run.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from pv.bundle.model import Environment, GpuInfo
from pv.git import GitError, run_git

PACKAGES: tuple[str, ...] = ("pv-harness", "torch", "bitsandbytes", "peft", "transformers", "pytest")
_GIB = float(1 << 30)


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git(root: Path, *args: str) -> str | None:
    try:
        return run_git(root, *args, timeout=20)  # the environment is captured on every run: keep it short
    except GitError:
        return None


def git_state(root: Path, exclude: Sequence[Path] = ()) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) for the repository holding ``root``; (None, None) outside git.

    ``exclude`` keeps the evidence folder itself from marking the tree dirty: writing one
    bundle must not change what the next one says about the code.
    """
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return None, None
    specs = ["."]
    for path in exclude:
        try:
            rel = Path(os.path.relpath(path, root))
        except ValueError:
            continue
        if not rel.as_posix().startswith(".."):
            specs.append(f":(exclude){rel.as_posix()}")
    status = _git(root, "status", "--porcelain", "--", *specs)
    return commit.strip(), (None if status is None else bool(status.strip()))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _cpu_counts() -> tuple[int | None, int | None, float | None]:
    try:
        # optional: absent, the probe records null instead of failing the run
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return None, os.cpu_count(), None
    return (
        psutil.cpu_count(logical=False),
        psutil.cpu_count(logical=True),
        round(psutil.virtual_memory().total / _GIB, 2),
    )


def gpus() -> list[GpuInfo]:
    """Every NVIDIA GPU NVML reports.  A device whose memory NVML cannot size is one that
    shares host memory (Jetson, GB10): reported as ``integrated``."""
    try:
        # optional: absent, the probe records null instead of failing the run
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError subclasses: no driver, no device
        return []
    found: list[GpuInfo] = []
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            try:
                total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
                found.append(GpuInfo(name=name, memory_gib=round(total / _GIB, 2), memory_class="discrete"))
            except Exception:
                found.append(GpuInfo(name=name, memory_gib=None, memory_class="integrated"))
    except Exception:
        return found
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return found


def capture(root: Path, exclude: Sequence[Path] = ()) -> Environment:
    commit, dirty = git_state(root, exclude)
    physical, logical, memory = _cpu_counts()
    devices = gpus()
    return Environment(
        python=platform.python_version(),
        implementation=f"{platform.python_implementation()} {sys.version.split()[0]}",
        packages={name: package_version(name) for name in PACKAGES},
        git_commit=commit,
        git_dirty=dirty,
        os=f"{platform.system()} {platform.release()}",
        machine=platform.machine(),
        cpu_model=cpu_model(),
        cpu_cores_physical=physical,
        cpu_cores_logical=logical,
        memory_gib=memory,
        gpus=devices,
        gpu=devices[0].name if devices else "none",
    )
