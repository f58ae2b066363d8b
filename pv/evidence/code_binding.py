"""Evidence bound to the code it measured: which files a contract's falsifiers ran, and their digests.

A bundle records (``bundle.code``) the sha256 of every file its verdicts rest on:

- each falsifier's checker module, the packages' ``__init__.py`` above it, and every module inside
  the checker packages it imports, directly or through one another, at the top or inside a
  function (:mod:`pv.import_closure`, the closure the mutation campaign's cache uses too);
- every file of the system under test: the packages ``[tool.pv] code_packages`` names (default:
  the fault packages, where the code a mutant breaks lives);
- the ``conftest.py`` files pytest loads for the contract (its folder and each one above it, up
  to the project root): they hold the fixtures the checkers are given.

A bundle whose files differ from the same scope computed now is ``stale (code changed)`` for
every status decision, and the difference (files changed, added, removed) is named.  The file set
is computed from the contract and the configuration *now*, not from the list the bundle carries,
so a bundle cannot narrow its own scope.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pv.bundle.digest import declared_falsifiers
from pv.config import PvConfig, load_config
from pv.import_closure import closure, module_file

_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (path, inode, size, mtime) -> sha256
_CLOSURES: dict[tuple[str, tuple[str, ...], int, int], tuple[str, ...]] = {}
_SKIP_DIRS = {"__pycache__"}


def file_sha256(path: Path) -> str:
    """sha256 of ``path``'s bytes, computed once per version of the file in this process."""
    st = path.stat()
    key = (os.fspath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    found = _DIGESTS.get(key)
    if found is None:
        found = _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def scope_digest(files: dict[str, str]) -> str:
    """One sha256 over a scope's sorted ``path -> sha256`` map."""
    h = hashlib.sha256()
    for rel, digest in sorted(files.items()):
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest()


def checks_of(data: Any) -> list[str]:
    """The ``check`` of every falsifier of a parsed contract, in order, without repeats."""
    checks = (t.get("check") for t in declared_falsifiers(data))
    return list(dict.fromkeys(c for c in checks if isinstance(c, str)))


@dataclass(frozen=True)
class CodeScope:
    """Where the code a project's evidence is bound to lives: its root and packages."""

    root: Path
    checker_packages: tuple[str, ...]
    measured_packages: tuple[str, ...]

    @classmethod
    def of(cls, config: PvConfig) -> CodeScope:
        return cls(config.root, tuple(config.checker_packages), tuple(config.measured_packages))

    @classmethod
    def governing(cls, start: Path) -> CodeScope:
        """The scope of the configuration that governs ``start`` (a contract's folder, a root)."""
        return cls.of(load_config(start))

    @property
    def packages(self) -> list[str]:
        return sorted({*self.checker_packages, *self.measured_packages})

    def _checker_files(self, check: str) -> list[Path]:
        module = check.partition(":")[0]
        file = module_file(self.root, module) if module else None
        if file is None:
            return []
        st = file.stat()
        key = (os.fspath(file), self.checker_packages, st.st_ino, st.st_mtime_ns)
        found = _CLOSURES.get(key)
        if found is None:
            imported = closure(self.root, file, self.checker_packages)
            found = _CLOSURES[key] = tuple(rel for rel, _ in imported)
        files = [file, *(self.root / rel for rel in found)]
        parts = module.split(".")
        for i in range(1, len(parts)):  # the packages' __init__.py run before the module
            init = module_file(self.root, ".".join(parts[:i]))
            if init is not None:
                files.append(init)
        return files

    def _package_files(self, package: str) -> list[Path]:
        base = self.root.joinpath(*package.split("."))
        if base.is_dir():
            out = []
            for folder, dirs, names in os.walk(base):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                out += [Path(folder) / n for n in names if not n.startswith(".") and not n.endswith((".pyc", ".pyo"))]
            return out
        single = base.with_suffix(".py")
        return [single] if single.is_file() else []

    def _conftests(self, contract_path: Path) -> list[Path]:
        root = self.root.resolve()
        try:
            folder = contract_path.resolve().parent.relative_to(root)
        except ValueError:
            return []
        out = [root / "conftest.py"]
        here = root
        for part in folder.parts:
            here = here / part
            out.append(here / "conftest.py")
        return [p for p in out if p.is_file()]

    def files(self, contract_path: Path, checks: Iterable[str]) -> dict[str, str]:
        """``POSIX path relative to the root -> sha256`` of every file in the contract's scope now."""
        paths: list[Path] = []
        for check in checks:
            paths += self._checker_files(check)
        for package in self.measured_packages:
            paths += self._package_files(package)
        paths += self._conftests(contract_path)
        return dict(sorted(self._digests(paths).items()))

    def checker_files(self, check: str) -> dict[str, str]:
        """The part of the scope one check adds: its module, the packages above it, what it imports.
        ``files(c, [check])`` is ``files(c, [])`` with these added."""
        return self._digests(self._checker_files(check))

    def _digests(self, paths: Iterable[Path]) -> dict[str, str]:
        root = self.root.resolve()
        out: dict[str, str] = {}
        for path in paths:
            resolved = path.resolve()
            try:
                rel = resolved.relative_to(root).as_posix()
            except ValueError:
                rel = resolved.as_posix()
            if rel not in out and resolved.is_file():
                out[rel] = file_sha256(resolved)
        return out

    def snapshot(self, contract_path: Path, data: Any) -> dict[str, Any]:
        """What a bundle records of the code: ``packages``, ``files`` and their ``digest``."""
        files = self.files(contract_path, checks_of(data))
        return {"packages": self.packages, "files": files, "digest": scope_digest(files)}


def code_changes(recorded: dict[str, str], now: dict[str, str], limit: int = 6) -> list[str]:
    """What differs between a bundle's files and the scope now, worst first, at most ``limit`` named."""
    changed = sorted(f for f in recorded.keys() & now.keys() if recorded[f] != now[f])
    added = sorted(now.keys() - recorded.keys())
    removed = sorted(recorded.keys() - now.keys())
    out = [f"changed {f}" for f in changed] + [f"new {f}" for f in added] + [f"gone {f}" for f in removed]
    if len(out) > limit:
        out = [*out[:limit], f"and {len(out) - limit} more"]
    return out
