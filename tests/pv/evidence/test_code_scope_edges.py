"""The code scope at its edges: the checks a contract names, each once in the order first named;
a checker under a namespace package (no ``__init__.py`` above it); a checker file replaced by
another at the same time stamp; a scope given relative paths; the scope a pyproject sets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pv.evidence.code_binding import CodeScope, checks_of
from tests.pv.evidence.test_code_scope_walk import _write


def test_each_check_once_in_the_order_first_named() -> None:
    data = {
        "falsification_tests": [
            {"id": "F1", "check": "b.mod:g"},
            {"id": "F2", "check": "a.mod:f"},
            {"id": "F3", "check": "b.mod:g"},
            {"check": "c.mod:h"},  # no id: not a falsifier
            {"id": "F4", "check": ["a.mod:f"]},
        ]
    }
    assert checks_of(data) == ["b.mod:g", "a.mod:f"]


def test_a_namespace_package_above_a_checker_adds_only_the_inits_there_are(tmp_path: Path) -> None:
    _write(tmp_path, {"ns/fam/__init__.py": "", "ns/fam/mine.py": "X = 1\n"})
    scope = CodeScope(tmp_path, ("ns",), ())
    assert sorted(scope.checker_files("ns.fam.mine:f")) == ["ns/fam/__init__.py", "ns/fam/mine.py"]


def test_a_checker_replaced_by_another_file_at_the_same_time_is_read_again(tmp_path: Path) -> None:
    _write(tmp_path, {"checks/__init__.py": "", "checks/a.py": "", "checks/b.py": ""})
    checker, other = tmp_path / "checks" / "mine.py", tmp_path / "other.py"
    checker.write_text("from checks import a\n")
    scope = CodeScope(tmp_path, ("checks",), ())
    assert "checks/a.py" in scope.checker_files("checks.mine:f")
    other.write_text("from checks import b\n")
    st = checker.stat()
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same time stamp, another file (inode)
    os.replace(other, checker)
    assert checker.stat().st_mtime_ns == st.st_mtime_ns
    assert sorted(scope.checker_files("checks.mine:f")) == ["checks/__init__.py", "checks/b.py", "checks/mine.py"]


def test_a_scope_given_relative_paths_is_the_scope_given_absolute_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        tmp_path,
        {"conftest.py": "root\n", "contracts/conftest.py": "family\n", "system/core.py": "C = 1\n"},
    )
    absolute = CodeScope(tmp_path, (), ("system",)).files(tmp_path / "contracts" / "x-v1.yaml", [])
    assert list(absolute) == ["conftest.py", "contracts/conftest.py", "system/core.py"]
    monkeypatch.chdir(tmp_path)
    assert CodeScope(Path("."), (), ("system",)).files(Path("contracts/x-v1.yaml"), []) == absolute


def test_the_scope_a_pyproject_sets(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.pv]\nchecker_packages = ["checks", "more"]\ncode_packages = ["system"]\n',
            "contracts/x-v1.yaml": "",
        },
    )
    scope = CodeScope.governing(tmp_path / "contracts")
    assert scope == CodeScope(tmp_path, ("checks", "more"), ("system",))
