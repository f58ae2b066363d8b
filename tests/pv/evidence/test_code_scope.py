"""The code a contract's evidence is bound to, file by file: the checker and what it imports, the
packages above it, the system under test, the conftests on the contract's path; and how a change
of it is named."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pv.evidence.code_binding import CodeScope, checks_of, code_changes, file_sha256, scope_digest


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _tree(root: Path) -> CodeScope:
    files = {
        "checks/__init__.py": "",
        "checks/fam/__init__.py": "X = 1\n",
        "checks/fam/mine.py": "from checks import helpers\n\ndef check():\n    return helpers.H\n",
        "checks/helpers.py": "H = 2\n",
        "checks/unused.py": "U = 3\n",
        "system/__init__.py": "",
        "system/core.py": "C = 4\n",
        "system/__pycache__/core.cpython-311.pyc": "bytes",
        "system/.hidden.py": "no\n",
        "system/data.bin.pyc": "no\n",
        "system/sub/deep.py": "D = 5\n",
        "single.py": "S = 6\n",
        "conftest.py": "root\n",
        "contracts/conftest.py": "contracts\n",
        "contracts/family/x-v1.yaml": "metadata: {}\n",
        "elsewhere/conftest.py": "not on the path\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return CodeScope(root, ("checks",), ("system", "single", "absent"))


def test_the_files_of_a_contracts_scope(tmp_path: Path) -> None:
    scope = _tree(tmp_path)
    contract = tmp_path / "contracts" / "family" / "x-v1.yaml"
    files = scope.files(contract, ["checks.fam.mine:check", "checks.fam.mine:check", "no.such.module:f"])
    assert list(files) == [
        "checks/__init__.py",
        "checks/fam/__init__.py",
        "checks/fam/mine.py",
        "checks/helpers.py",
        "conftest.py",
        "contracts/conftest.py",
        "single.py",
        "system/__init__.py",
        "system/core.py",
        "system/sub/deep.py",
    ]
    assert files["checks/helpers.py"] == _sha("H = 2\n") and files["conftest.py"] == _sha("root\n")
    assert scope.packages == ["absent", "checks", "single", "system"]
    assert scope.checker_files("checks.fam.mine:check") == {
        k: files[k] for k in ("checks/fam/mine.py", "checks/helpers.py", "checks/__init__.py", "checks/fam/__init__.py")
    }
    assert scope.checker_files(":nothing") == {}
    outside = tmp_path.parent / "outside-contract.yaml"
    assert "conftest.py" not in scope.files(outside, [])  # a contract outside the root has no conftests here


def test_a_snapshot_and_its_digest(tmp_path: Path) -> None:
    scope = _tree(tmp_path)
    contract = tmp_path / "contracts" / "family" / "x-v1.yaml"
    data = {"falsification_tests": [{"id": "F1", "check": "checks.fam.mine:check"}, {"id": "F2", "check": 3}]}
    snap = scope.snapshot(contract, data)
    assert snap["packages"] == scope.packages and snap["files"] == scope.files(contract, ["checks.fam.mine:check"])
    assert snap["digest"] == scope_digest(snap["files"])
    assert checks_of(data) == ["checks.fam.mine:check"] and checks_of(None) == []


def test_the_scope_digest_is_of_the_sorted_map() -> None:
    expected = hashlib.sha256(b"a.py\x001\nb.py\x002\n").hexdigest()
    assert scope_digest({"b.py": "2", "a.py": "1"}) == expected
    assert scope_digest({}) == hashlib.sha256(b"").hexdigest()


def test_a_file_digest_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text("one\n")
    assert file_sha256(path) == _sha("one\n")
    path.write_text("two, longer\n")
    assert file_sha256(path) == _sha("two, longer\n")


def test_how_a_change_is_named() -> None:
    recorded = {"a.py": "1", "b.py": "2", "c.py": "3"}
    now = {"a.py": "1", "b.py": "9", "d.py": "4"}
    assert code_changes(recorded, now) == ["changed b.py", "new d.py", "gone c.py"]
    many_now = {f"n{i}.py": "x" for i in range(8)}
    assert code_changes({}, many_now) == [f"new n{i}.py" for i in range(6)] + ["and 2 more"]
    assert code_changes({}, many_now, limit=8) == [f"new n{i}.py" for i in range(8)]
    assert code_changes(recorded, recorded) == []
