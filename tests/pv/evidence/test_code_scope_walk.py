"""What the code scope walks and what it remembers: hidden folders and ``__pycache__`` under a
measured package are skipped whatever they hold; a checker's imports are read again when the
checker changes, and a scope with other checker packages follows other imports; a file reached
outside the root keeps its absolute path."""

from __future__ import annotations

import os
from pathlib import Path

from pv.evidence.code_binding import CodeScope


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_hidden_folders_and_pycache_are_skipped_whatever_they_hold(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "system/core.py": "C = 1\n",
            "system/.venv/lib.py": "not measured\n",
            "system/__pycache__/notes.txt": "not measured\n",
            "system/sub/.cache/x.py": "not measured\n",
            "system/sub/deep.py": "D = 2\n",
        },
    )
    files = CodeScope(tmp_path, (), ("system",)).files(tmp_path / "c.yaml", [])
    assert list(files) == ["system/core.py", "system/sub/deep.py"]


def test_a_checker_s_imports_are_read_again_when_it_changes(tmp_path: Path) -> None:
    _write(tmp_path, {"checks/__init__.py": "", "checks/a.py": "A = 1\n", "checks/b.py": "B = 1\n"})
    checker = tmp_path / "checks" / "mine.py"
    checker.write_text("from checks import a\n")
    scope = CodeScope(tmp_path, ("checks",), ())
    assert sorted(scope.checker_files("checks.mine:f")) == ["checks/__init__.py", "checks/a.py", "checks/mine.py"]
    checker.write_text("from checks import b\n")  # the same file, now importing another module
    st = checker.stat()
    os.utime(checker, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert sorted(scope.checker_files("checks.mine:f")) == ["checks/__init__.py", "checks/b.py", "checks/mine.py"]


def test_other_checker_packages_follow_other_imports_of_the_same_checker(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "checks/__init__.py": "",
            "checks/mine.py": "from helpers import h\nfrom checks import a\n",
            "checks/a.py": "",
            "helpers/__init__.py": "",
            "helpers/h.py": "",
        },
    )
    narrow = CodeScope(tmp_path, ("checks",), ())
    wide = CodeScope(tmp_path, ("checks", "helpers"), ())
    assert "helpers/h.py" not in narrow.checker_files("checks.mine:f")
    assert "helpers/h.py" in wide.checker_files("checks.mine:f")


def test_a_file_outside_the_root_keeps_its_absolute_path(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    _write(elsewhere, {"core.py": "C = 1\n"})
    _write(root, {"system/__init__.py": ""})
    (root / "system" / "core.py").symlink_to(elsewhere / "core.py")
    files = CodeScope(root, (), ("system",)).files(root / "c.yaml", [])
    assert list(files) == sorted(["system/__init__.py", (elsewhere / "core.py").resolve().as_posix()])
