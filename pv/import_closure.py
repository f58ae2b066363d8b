"""Which modules of a project a module imports, read from the source (never by importing it).

One mechanism for the two places that need to know what code a checker depends on: evidence
(:mod:`pv.evidence.code_binding`, which binds a bundle to the files its checkers ran) and the
mutation campaign's cache (``scripts/mutation/cache.py``, which keeps a verdict while the files it
rests on are unchanged).  An import inside a function counts like one at the top: a checker that
imports a helper lazily still measures with it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from pathlib import Path


def _inside(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def imported_modules(source: bytes, packages: Iterable[str]) -> set[str]:
    """See :func:`_imported`; one parse per distinct source, however many closures reach it."""
    return set(_imported(source, tuple(packages)))


@functools.lru_cache(maxsize=4096)
def _imported(source: bytes, packages: tuple[str, ...]) -> frozenset[str]:
    """The modules inside ``packages`` that ``source`` imports, at the top or inside a function.

    ``from pkg import name`` counts ``pkg.name`` (a submodule or, if it is not one, ``pkg`` itself
    is still named by the caller's resolution); relative imports are left out, as checkers are
    named by absolute module paths."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in packages:
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
            elif _inside(node.module, packages):
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names if _inside(alias.name, packages)}
    return frozenset(names)


def module_file(root: Path, name: str) -> Path | None:
    """``name``'s source file under ``root`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def closure(
    root: Path,
    start: Path,
    packages: Iterable[str],
    keep: Callable[[Path], bool] = lambda _path: True,
) -> list[tuple[str, bytes]]:
    """The files under ``root`` of the modules inside ``packages`` that ``start`` imports, directly
    or through one another, as ``(POSIX path relative to root, bytes)`` sorted by path; ``start``
    itself is left out, and so is any file ``keep`` refuses (its imports are not followed)."""
    packages = tuple(packages)
    found: dict[str, bytes] = {}
    todo = [start.read_bytes()]
    while todo:
        for name in sorted(imported_modules(todo.pop(), packages)):
            path = module_file(root, name)
            if path is None or path == start or not keep(path):
                continue
            rel = path.relative_to(root).as_posix()
            if rel not in found:
                found[rel] = path.read_bytes()
                todo.append(found[rel])
    return sorted(found.items())
