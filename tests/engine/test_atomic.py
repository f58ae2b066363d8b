"""engine.atomic: outputs replace their targets whole and get the mode the umask gives any writer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.atomic import atomic_dir, atomic_file, current_umask


@pytest.fixture
def umask_027() -> object:
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_a_folder_and_files_a_writer_created_private_get_the_umask_mode(tmp_path: Path, umask_027: object) -> None:
    assert current_umask() == 0o027
    with atomic_dir(tmp_path / "out") as tmp:
        private = tmp / "weights.safetensors"
        private.write_bytes(b"x")
        private.chmod(0o600)  # what safetensors' save_file leaves
        (tmp / "sub").mkdir(mode=0o700)
        (tmp / "sub" / "config.json").write_text("{}")
    modes = {
        p.relative_to(tmp_path).as_posix(): p.stat().st_mode & 0o777
        for p in [tmp_path / "out", *(tmp_path / "out").rglob("*")]
    }
    assert modes == {"out": 0o750, "out/weights.safetensors": 0o640, "out/sub": 0o750, "out/sub/config.json": 0o640}


def test_an_atomic_file_is_not_left_private(tmp_path: Path, umask_027: object) -> None:
    with atomic_file(tmp_path / "m.gguf") as tmp:
        tmp.write_bytes(b"GGUF")
    assert (tmp_path / "m.gguf").stat().st_mode & 0o777 == 0o640


def test_a_failed_folder_leaves_the_old_one_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (tmp_path / "out" / "old.txt").read_text() == "old"
