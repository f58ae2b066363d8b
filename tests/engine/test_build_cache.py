"""engine.build_cache: an artefact is built once however many processes ask for it at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from engine.build_cache import DONE, built_once


def _build_slowly(root: str, log: str) -> str:
    import time

    def build(out: Path) -> None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("built\n")
        time.sleep(0.5)  # long enough that the other process arrives while this one builds
        (out / "weights.bin").write_bytes(b"\x01" * 16)

    return str(built_once("demo", {"n": 1}, build, root=Path(root)))


def test_concurrent_processes_build_once_and_share_the_folder(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        folders = pool.starmap(_build_slowly, [(str(tmp_path), str(log))] * 2)
    assert folders[0] == folders[1]
    assert log.read_text().splitlines() == ["built"]
    assert (Path(folders[0]) / "weights.bin").read_bytes() == b"\x01" * 16
    assert (Path(folders[0]) / DONE).is_file()


def test_a_failed_build_leaves_nothing_and_the_next_call_builds_again(tmp_path: Path) -> None:
    def broken(out: Path) -> None:
        (out / "half.bin").write_bytes(b"x")
        raise RuntimeError("killed halfway")

    with pytest.raises(RuntimeError, match="halfway"):
        built_once("demo", {"n": 2}, broken, root=tmp_path)
    assert [p.name for p in (tmp_path / "demo").iterdir() if not p.name.endswith(".lock")] == []
    calls = []
    folder = built_once("demo", {"n": 2}, lambda out: calls.append(out), root=tmp_path)
    assert len(calls) == 1 and (folder / DONE).is_file()


def test_another_key_or_a_fault_in_the_environment_is_another_artefact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = built_once("demo", {"n": 3}, lambda out: None, root=tmp_path)
    assert built_once("demo", {"n": 3}, lambda out: pytest.fail("rebuilt"), root=tmp_path) == a
    assert built_once("demo", {"n": 4}, lambda out: None, root=tmp_path) != a
    monkeypatch.setenv("PV_FAULTS", "nf4_skipped")
    assert built_once("demo", {"n": 3}, lambda out: None, root=tmp_path) != a
