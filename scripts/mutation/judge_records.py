"""What each verdict of the judge's mutation run rests on, and how the verdicts are kept.

A record is one decided mutant: mutmut's digest of the mutated function, its exit code, and the
test files (with the ``conftest.py`` files above them) that reached the function when it was
decided.  ``mutation/judge-results.jsonl`` holds one line per record and
``mutation/judge-results-tests.json`` each set of test files once.  :func:`holds` says whether a
record still stands (``scripts/mutation/judge.py`` gives those back to mutmut).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pv.import_closure import closure
from pv.mutation import KILLED, function_of, status_of


def key_of(mutant: str) -> str:
    """The mutated function as mutmut's stats name it: ``pv.expr.x_f__mutmut_3`` -> ``pv.expr.x_f``."""
    return mutant.rpartition("__mutmut_")[0]


def test_files(node: str, tests_root: Path) -> list[str]:
    """The files a test's verdict depends on besides pv: its own file and every conftest.py above it."""
    path = node.split("::", 1)[0]
    files = [path]
    parts = Path(path).parent.parts
    for depth in range(len(parts), -1, -1):
        conftest = Path(*parts[:depth], "conftest.py").as_posix() if depth else "conftest.py"
        if (tests_root / conftest).is_file():
            files.append(conftest)
    return files


class FileDigests:
    """sha256 (16 hex digits) of files under a root, each read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[str, str] = {}
        self._helpers: dict[str, list[str]] = {}

    def __call__(self, rel: str) -> str:
        if rel not in self._known:
            try:
                self._known[rel] = hashlib.sha256((self.root / rel).read_bytes()).hexdigest()[:16]
            except OSError:
                self._known[rel] = "absent"
        return self._known[rel]

    def helpers(self, rel: str) -> list[str]:
        """The modules of the ``tests`` package that the test file ``rel`` imports, directly or
        through one another (``tests/pv/toy.py``, another test file's fixtures)."""
        if rel not in self._helpers:
            path = self.root / rel
            found = closure(self.root, path, ("tests",)) if path.is_file() else []
            self._helpers[rel] = [r for r, _ in found]
        return self._helpers[rel]

    def of_tests(self, nodes: Iterable[str], helpers: bool = False) -> dict[str, str]:
        """file -> digest for every file the tests ``nodes`` depend on; with ``helpers``, the
        modules they import from the tests too."""
        files = {f for node in nodes for f in test_files(node, self.root)}
        if helpers:
            files |= {h for f in list(files) for h in self.helpers(f)}
        return {f: self(f) for f in sorted(files)}


@dataclass(frozen=True)
class Record:
    """One decided mutant: its outcome and what the outcome rests on."""

    mutant: str
    module: str
    function_digest: str  # mutmut's digest of the mutated function's source
    exit_code: int
    tests: dict[str, str] = field(default_factory=dict)  # file -> digest, of the tests that reached it
    # whether ``tests`` holds the helper modules those tests import (records before it do not)
    helpers: bool = False

    @property
    def status(self) -> str:
        return status_of(self.exit_code)

    @property
    def key(self) -> str:
        """The mutated function as mutmut's stats name it."""
        return key_of(self.mutant)


def holds(record: Record, function_digest: str | None, reach: Mapping[str, set[str]], digests: FileDigests) -> bool:
    """Whether ``record`` still stands: the same function source, and the tests it rested on unchanged.

    A kill stands while every test file that reached the function then is unchanged (a test added
    elsewhere cannot undo it), and so do the helper modules those tests import, in the records
    that keep them (:attr:`Record.helpers`).  Any other outcome (survived, no test reached it, a crash) stands
    only while exactly the same files, unchanged, reach the function: a new or edited test that
    reaches it runs the mutant again."""
    if function_digest is None or function_digest != record.function_digest:
        return False
    if record.status in KILLED:
        return all(digests(f) == d for f, d in record.tests.items())
    return digests.of_tests(reach.get(record.key, ()), record.helpers) == record.tests


def _tests_id(tests: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(tests, sort_keys=True).encode()).hexdigest()[:12]


def read_records(path: Path) -> dict[str, Record]:
    """The records kept in ``path``; the test files they rest on are kept once each in :func:`tests_path`."""
    if not path.is_file():
        return {}
    sets: dict[str, dict[str, str]] = json.loads(tests_path(path).read_text(encoding="utf-8"))
    records: dict[str, Record] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            records[raw["mutant"]] = Record(
                raw["mutant"],
                raw["module"],
                raw["function_digest"],
                raw["exit_code"],
                sets[raw["tests"]],
                raw.get("helpers", False),
            )
    return records


def tests_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".jsonl") + "-tests.json")


def write_records(path: Path, records: Mapping[str, Record]) -> None:
    sets = {_tests_id(r.tests): dict(sorted(r.tests.items())) for r in records.values()}
    lines = [
        json.dumps(
            {
                "mutant": r.mutant,
                "module": r.module,
                "function": function_of(r.mutant),
                "function_digest": r.function_digest,
                "exit_code": r.exit_code,
                "status": r.status,
                "tests": _tests_id(r.tests),
            }
            | ({"helpers": True} if r.helpers else {}),  # a record before helpers were kept reads as it was
            sort_keys=True,
        )
        for r in sorted(records.values(), key=lambda r: r.mutant)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tests_path(path).write_text(json.dumps(dict(sorted(sets.items())), indent=1) + "\n", encoding="utf-8")
