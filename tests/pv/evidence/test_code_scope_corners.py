"""The code scope's corners: a check naming a module without a function still binds the module; a
project root that is itself a package adds nothing of its own to a checker's files, nor to a check
that names no module; a dangling link in a measured package is not in the scope; and a checker's
imports are read once per version of the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence import code_binding
from pv.evidence.code_binding import CodeScope
from tests.pv.evidence.test_code_scope_walk import _write


def test_a_check_without_a_function_binds_its_module(tmp_path: Path) -> None:
    _write(tmp_path, {"checks/__init__.py": "", "checks/mine.py": ""})
    scope = CodeScope(tmp_path, ("checks",), ())
    assert sorted(scope.checker_files("checks.mine")) == ["checks/__init__.py", "checks/mine.py"]


def test_a_root_that_is_a_package_adds_nothing_of_its_own(tmp_path: Path) -> None:
    _write(tmp_path, {"__init__.py": "", "checks/__init__.py": "", "checks/mine.py": ""})
    scope = CodeScope(tmp_path, ("checks",), ())
    assert sorted(scope.checker_files("checks.mine:f")) == ["checks/__init__.py", "checks/mine.py"]
    assert scope.checker_files(":f") == {}


def test_a_dangling_link_in_a_measured_package_is_not_in_the_scope(tmp_path: Path) -> None:
    _write(tmp_path, {"system/core.py": "C = 1\n"})
    (tmp_path / "system" / "gone.py").symlink_to(tmp_path / "nowhere.py")
    files = CodeScope(tmp_path, (), ("system",)).files(tmp_path / "c.yaml", [])
    assert list(files) == ["system/core.py"]


def test_a_checker_s_imports_are_read_once_per_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"checks/__init__.py": "", "checks/a.py": "", "checks/mine.py": "from checks import a\n"})
    reads: list[Path] = []
    read = code_binding.closure

    def counted(root: Path, start: Path, packages: tuple[str, ...]) -> list[tuple[str, bytes]]:
        reads.append(start)
        return read(root, start, packages)

    monkeypatch.setattr(code_binding, "closure", counted)
    scope = CodeScope(tmp_path, ("checks",), ())
    first = scope.checker_files("checks.mine:f")
    assert scope.checker_files("checks.mine:g") == first and "checks/a.py" in first
    assert reads == [tmp_path / "checks" / "mine.py"]
