"""Which files a measured package holds, and how often they are read: a dotted package is the
folder its parts name; compiled ``.pyc`` and ``.pyo`` files are not code a bundle is bound to;
each version of a file is hashed once in a process, and a new version is hashed again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pv.evidence.code_binding import CodeScope, file_sha256
from tests.pv.evidence.test_code_scope_walk import _write


def test_a_dotted_measured_package_is_the_folder_its_parts_name(tmp_path: Path) -> None:
    _write(tmp_path, {"system/__init__.py": "", "system/sub/__init__.py": "", "system/sub/core.py": "C = 1\n"})
    _write(tmp_path, {"system/other.py": "O = 1\n"})  # in the parent package, not the one measured
    files = CodeScope(tmp_path, (), ("system.sub",)).files(tmp_path / "c.yaml", [])
    assert list(files) == ["system/sub/__init__.py", "system/sub/core.py"]


def test_a_dotted_measured_module_is_its_file(tmp_path: Path) -> None:
    _write(tmp_path, {"system/__init__.py": "", "system/core.py": "C = 1\n", "system/other.py": "O = 1\n"})
    files = CodeScope(tmp_path, (), ("system.core",)).files(tmp_path / "c.yaml", [])
    assert list(files) == ["system/core.py"]


@pytest.mark.parametrize("compiled", ["core.pyc", "core.pyo"])
def test_compiled_files_beside_the_source_are_not_measured(tmp_path: Path, compiled: str) -> None:
    _write(tmp_path, {"system/core.py": "C = 1\n", f"system/{compiled}": "bytes of an old build\n"})
    files = CodeScope(tmp_path, (), ("system",)).files(tmp_path / "c.yaml", [])
    assert list(files) == ["system/core.py"]


def test_each_version_of_a_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "core.py"
    path.write_text("C = 1\n")
    first = file_sha256(path)
    assert first == hashlib.sha256(b"C = 1\n").hexdigest()

    reads: list[Path] = []
    read_bytes = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    assert file_sha256(path) == first
    assert reads == []  # the same version again: its digest is remembered

    path.write_text("C = 22\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert file_sha256(path) == hashlib.sha256(b"C = 22\n").hexdigest()
    assert reads == [path]
