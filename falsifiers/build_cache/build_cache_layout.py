"""``engine.build_cache.built_once`` in this process: what a key means and what a build leaves.

FALSIFY-CACHE-001 runs its builds in child processes; here the same function is called in
process, under a cache root that does not exist yet (two folders deep).  A key is a mapping: the
same mapping in another insertion order, and one holding a path, name one artefact, built once.
The DONE marker holds the key as sorted JSON (paths as text) and a newline, written out here.  A
partial folder a killed build of this process left, and an unfinished folder of an older layout
at the artefact's place, are cleared by the next build.  Nothing is written outside the root: the
builds run in a fresh working directory, which stays empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from engine.build_cache import DONE, built_once
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(
    observes=["builds", "artefacts", "done_markers_differing", "stale_folders_cleared", "stray_files"],
    ids=["FALSIFY-CACHE-002"],
)
def built_once_in_process(tmp_path: Path) -> dict[str, Any]:
    """Keys in two orders and with a path, a stale partial folder and an older unfinished one."""
    # a fresh, empty working directory: a file left there by an earlier run must not hide one
    # this build leaves (a lock named after no folder lands in the working directory)
    cwd, here = Path.cwd(), fresh_dir(tmp_path, "cwd-")
    os.chdir(here)
    try:
        return _builds(tmp_path, here)
    finally:
        os.chdir(cwd)


def _builds(tmp_path: Path, here: Path) -> dict[str, Any]:

    root = fresh_dir(tmp_path, "cache-") / "not" / "yet"
    calls: list[Path] = []

    def build(folder: Path) -> None:
        calls.append(folder)
        (folder / "artefact.txt").write_text(f"build {len(calls)}\n", encoding="utf-8")

    keys = [{"b": 1, "a": {"y": 2, "x": 3}}, {"a": {"x": 3, "y": 2}, "b": 1}, {"file": Path("/data/x.bin"), "n": 4}]
    folders = [built_once("layout", key, build, root=root) for key in keys]
    out: dict[str, Any] = {"builds": len(calls), "artefacts": len(set(folders))}
    want = [json.dumps(key, sort_keys=True, default=str) + "\n" for key in keys]
    out["done_markers_differing"] = sum(
        (f / DONE).read_text(encoding="utf-8") != w for f, w in zip(folders, want, strict=True)
    )

    # a partial folder of this process and an unfinished older folder at the artefact's place
    key = {"stale": True}
    probe = built_once("probe", key, build, root=root)  # where "layout" would put this key
    final = root / "layout" / probe.name
    partial = root / "layout" / f".{final.name}.{os.getpid()}.partial"
    for folder in (partial, final):
        folder.mkdir(parents=True)
        (folder / "junk.txt").write_text("left by a killed build\n", encoding="utf-8")
    try:
        built = built_once("layout", key, build, root=root)
        cleared = sorted(p.name for p in built.iterdir()) == [DONE, "artefact.txt"] and not partial.exists()
    except OSError:
        cleared = False
    out["stale_folders_cleared"] = cleared
    out["stray_files"] = len(os.listdir(here))
    return out
