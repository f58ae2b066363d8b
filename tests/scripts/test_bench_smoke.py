"""Every bench script still runs: each at its --smoke size, ending with its figure line.

A benchmark nothing runs rots (a renamed option, a contract format it no longer writes) and its
figures in the README can no longer be reproduced.  (The mutation campaign is no benchmark: it is
``scripts/mutation/``, with its own tests.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_") and p.name != "synthetic.py")


def test_bench_holds_benchmarks_only() -> None:
    assert SCRIPTS, "no bench scripts found"
    assert not list(BENCH.glob("*mutation*")), "the mutation campaign lives in scripts/mutation/, its data in mutation/"


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_runs_at_smoke_size_and_prints_its_figure(script: str, tmp_path: Path) -> None:
    env = {**os.environ, "PV_ENGINE_CACHE": os.environ.get("PV_ENGINE_CACHE", str(Path.home() / ".cache/pv-engine"))}
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    figures = [line for line in proc.stdout.splitlines() if line.startswith(f"figure: {Path(script).stem}: ")]
    assert len(figures) == 1, out[-4000:]
