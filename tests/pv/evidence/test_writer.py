"""A writer killed at any step leaves nothing that verifies; gc clears what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pv.evidence import gc
from pv.evidence.verify import find_bundles, leftover_tmp_dirs, verify_path
from tests.pv.evidence.conftest import Project

REPO = Path(__file__).resolve().parents[3]

# Runs the real writer in a child process.  Every write step is wrapped: at step STOP the child
# writes half of that file (if it is one), says "paused" and sleeps until it is killed.
CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from pv.evidence import writer
    from pv.results import Verdict
    from tests.pv.evidence.conftest import ENV, Project, record, result

    root, stop = Path(sys.argv[2]), int(sys.argv[3])
    project = Project(root, root / "contracts" / "demo-v1.yaml", root / "evidence")
    step = [0]

    def pause():
        print("paused", flush=True)
        time.sleep(120)

    def wrap(name):
        real = getattr(writer, name)
        def wrapped(*args):
            if step[0] == stop:
                if name == "_write_file":
                    path, data = args
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data[: len(data) // 2])
                pause()
            step[0] += 1
            return real(*args)
        setattr(writer, name, wrapped)

    for name in ("_copy_file", "_write_file", "_publish"):
        wrap(name)
    logs = []
    for i in range(2):
        p = root / f"step{i}.log"
        p.write_text(f"log {i}\\n")
        logs.append(str(p))
    res = [result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=logs)]
    print([str(o.path) for o in writer.write_run(record(project, res), project.evidence, root, ENV)], flush=True)
    """
)
# steps: copy log 0, copy log 1, bundle.json, statement, MANIFEST, publish (rename)
STEPS = 6


def run_child(project: Project, stop: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(REPO), str(project.root), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


@pytest.mark.parametrize("stop", range(STEPS))
def test_sigkill_mid_write_leaves_nothing_that_verifies(project: Project, stop: int) -> None:
    child = run_child(project, stop)
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "paused"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert find_bundles(project.evidence) == []
    assert verify_path(project.evidence) == []
    [tmp] = leftover_tmp_dirs(project.evidence)
    assert tmp.name.endswith(f"-{child.pid}")

    plan = gc.plan(project.evidence, keep=1, backing=[])
    assert plan.tmp == [tmp] and plan.remove == []
    gc.apply(plan)
    assert not tmp.exists()


def test_the_same_child_unkilled_writes_a_bundle_that_verifies(project: Project) -> None:
    child = run_child(project, stop=-1)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0, out
    [report] = verify_path(project.evidence)
    assert report.ok and str(report.path) in out
    assert leftover_tmp_dirs(project.evidence) == []
