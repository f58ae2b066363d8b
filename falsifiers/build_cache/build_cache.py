"""The build cache the contract fixtures stand on: built once, rebuilt when what made it changes.

``engine.build_cache.built_once`` hands every process one folder per artefact key.  The checker
drives it from separate Python processes, as pytest-xdist workers and successive sessions do: two
at once (one builds, the other waits for it), one after (nothing rebuilt), another key, a build
that fails (nothing left behind, the next call builds), and a copy of the engine package with one
source file changed, or a fault switched on in the environment (another artefact).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine
from falsifiers.shared.child_env import child_env
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# A process that asks for one artefact; its build sleeps (so that a second process arrives while it
# runs) and counts itself in builds.log.  argv: cache root, key as JSON, "fail" to raise mid-build.
CHILD = """
import json, sys, time
from pathlib import Path
from engine.build_cache import artefact_key, built_once

root, key, mode = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]

def build(folder):
    (folder / "artefact.txt").write_text(json.dumps(key))
    with open(root / "builds.log", "a") as log:
        log.write(json.dumps(key) + "\\n")
    time.sleep(1.5)
    if mode == "fail":
        raise RuntimeError("the build failed")

if mode == "key":
    print(json.dumps({"key": artefact_key(key)}))
else:
    try:
        folder = built_once("probe", key, build, root=root)
        print(json.dumps({"folder": str(folder), "artefact": (folder / "artefact.txt").read_text()}))
    except RuntimeError as exc:
        print(json.dumps({"error": str(exc)}))
"""


def _spawn(engine_parent: Path, root: Path, key: dict[str, Any], mode: str, faults: str = "") -> subprocess.Popen[str]:
    # the faults on in this process reach the child (a planted fault), and any the case adds
    env = child_env([engine_parent], [faults] if faults else [])
    # -P: the working directory (this repository, or mutmut's copy of it) is not put before PYTHONPATH,
    # so the engine the child imports is the one PYTHONPATH names; the working directory stays, as
    # mutmut's instrumented engine reads its configuration from there
    args = [sys.executable, "-P", "-c", CHILD, str(root), json.dumps(key), mode]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=120)
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"crashed": stderr[-500:]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _builds(root: Path) -> int:
    log = root / "builds.log"
    return len(log.read_text().splitlines()) if log.is_file() else 0


@checker(
    observes=[
        "concurrent_builds", "same_folder", "done_marker_matches", "rebuilt_when_unchanged", "other_key_built",
        "failed_left_nothing", "rebuilt_after_failure", "key_stable", "source_change_changes_key",
        "fault_changes_key", "crashed",
    ],
    ids=["FALSIFY-CACHE-001"],
)  # fmt: skip
def built_once_rebuilds_what_changed(tmp_path: Path) -> dict[str, Any]:
    """Two processes ask for one artefact at once, a third after them, a fourth for another key; a
    failing build, then the same key again; the key from a copy of the engine, the copy with one
    source file changed, and with a fault switched on."""

    work = fresh_dir(tmp_path, "build-cache-")
    here = Path(engine.__file__).resolve().parent.parent  # the engine this process runs
    root = work / "cache"
    root.mkdir()
    key = {"artefact": "probe", "n": 1}
    first, second = _spawn(here, root, key, "build"), _spawn(here, root, key, "build")
    a, b = _result(first), _result(second)
    out: dict[str, Any] = {"crashed": sum("crashed" in r for r in (a, b))}
    out["concurrent_builds"] = _builds(root)
    out["same_folder"] = a.get("folder") is not None and a.get("folder") == b.get("folder")
    done = Path(a.get("folder", work / "none")) / "DONE"
    out["done_marker_matches"] = done.is_file() and json.loads(done.read_text()) == key
    third = _result(_spawn(here, root, key, "build"))
    out["rebuilt_when_unchanged"] = _builds(root) - 1 + (third.get("folder") != a.get("folder"))
    other = _result(_spawn(here, root, {"artefact": "probe", "n": 2}, "build"))
    out["other_key_built"] = _builds(root) == 2 and other.get("folder") not in (None, a.get("folder"))
    bad_key = {"artefact": "probe", "n": 3}
    failed = _result(_spawn(here, root, bad_key, "fail"))
    probe = root / "probe"
    leftovers = sorted(p.name for p in probe.iterdir() if not p.name.endswith(".lock")) if probe.is_dir() else []
    out["failed_left_nothing"] = failed.get("error") == "the build failed" and len(leftovers) == 2
    again = _result(_spawn(here, root, bad_key, "build"))
    out["rebuilt_after_failure"] = _builds(root) == 4 and again.get("artefact") == json.dumps(bad_key)
    out["crashed"] += sum("crashed" in r for r in (third, other, failed, again))
    # the artefact key of a copy of the engine package: unchanged, one file changed, a fault on
    copy = work / "engine-copy"
    shutil.copytree(here / "engine", copy / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    keys = [_result(_spawn(copy, root, key, "key")).get("key") for _ in range(2)]
    with open(copy / "engine" / "generate.py", "a", encoding="utf-8") as fh:
        fh.write("\n# one line more\n")
    changed = _result(_spawn(copy, root, key, "key")).get("key")
    faulted = _result(_spawn(copy, root, key, "key", faults="greedy_sampling_noise")).get("key")
    out["key_stable"] = keys[0] is not None and keys[0] == keys[1]
    out["source_change_changes_key"] = changed is not None and changed != keys[0]
    out["fault_changes_key"] = faulted is not None and faulted not in (keys[0], changed)
    return out
