"""What a checker runs, wherever its code lives: the content the mutation cache keeps a verdict under.

A kill or a survival rests on what the falsifier executes, not on the file its definitions sit in.
So a checker's digest is taken over its *definitions*: the checker function, and every definition
of the checker package it names, directly or through another one (a helper in the same module, a
helper imported from a shared module, a constant), each as its syntax tree (``ast.dump``: no
comments, no layout).  Import statements are left out of the trees and kept as what they bind
instead: a name bound to the checker package is followed to the definition it names, any other
(``engine.lora.apply_lora``, ``torch``) is kept as ``alias=module.name``.  So moving a helper to
another module, hoisting an import to the top of its module or writing a comment beside it keeps
the digest, and editing what any reached definition does changes it.

The fixtures a checker requests count the same way: each fixture of the shared conftests that the
checker names among its parameters (and those fixtures' own, and every autouse one), with what it
reaches, and no other: a change to a fixture only real-model checkers request leaves every other
checker's digest as it was.

The engine's own code is never part of it: mutmut's digest of each mutated function covers that.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

Piece = tuple[str, bytes]


@dataclass
class _Module:
    """One module of the checker package: its top-level definitions and import bindings."""

    defs: dict[str, ast.stmt] = field(default_factory=dict)
    # local name -> (module, attribute or None for the module itself)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # top-level statements that neither define nor import (run at import time: a registration)
    effects: list[ast.stmt] = field(default_factory=list)


def import_bindings(node: ast.AST) -> Iterator[tuple[str, tuple[str, str | None]]]:
    """The names an ``import`` statement (or every one inside ``node``) binds, and what to."""
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    yield a.asname, (a.name, None)
                else:  # ``import a.b`` binds ``a``
                    head = a.name.split(".")[0]
                    yield head, (head, None)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for a in stmt.names:
                yield a.asname or a.name, (stmt.module, a.name)


class _WithoutImports(ast.NodeTransformer):
    def visit_Import(self, node: ast.Import) -> None:
        return None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return None


def tree_bytes(node: ast.AST) -> bytes:
    """``node``'s syntax tree without its import statements (an emptied body reads ``pass``)."""
    copy = _WithoutImports().visit(ast.parse(ast.unparse(node)))
    for holder in ast.walk(copy):
        if getattr(holder, "body", None) == []:
            holder.body = [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(copy).encode()


_Fixture = tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]  # (its file, its definition, autouse)
FILE = "file:"  # the prefix of a module named by its file (a conftest), not by its import name


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _fixture(node: ast.stmt) -> bool | None:
    """None unless ``node`` is a pytest fixture; else whether it is autouse."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "fixture":
            autouse = [k.value for k in (call.keywords if call else []) if k.arg == "autouse"]
            return bool(autouse and isinstance(autouse[0], ast.Constant) and autouse[0].value)
    return None


def _is_docstring(index: int, stmt: ast.stmt) -> bool:
    return index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


class CheckerDigests:
    """The definition closures of checkers under ``root``'s ``package``, its modules parsed once."""

    def __init__(self, root: Path, package: str = "falsifiers") -> None:
        self.root = root
        self.package = package
        self._modules: dict[str, _Module | None] = {}
        self._fixtures: dict[tuple[str, ...], tuple[dict[str, _Fixture], frozenset[Piece]]] = {}

    def _path(self, module: str) -> Path | None:
        if module.startswith(FILE):  # a fixture file, named by its path under the root
            path = self.root / module.removeprefix(FILE)
            return path if path.is_file() else None
        base = self.root / module.replace(".", "/")
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
        return None

    def ours(self, module: str) -> bool:
        return module == self.package or module.startswith((self.package + ".", FILE))

    def module(self, name: str) -> _Module | None:
        if name not in self._modules:
            path = self._path(name) if self.ours(name) else None
            self._modules[name] = self._parse(path) if path is not None else None
        return self._modules[name]

    @staticmethod
    def _parse(path: Path) -> _Module:
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):  # held as its bytes: any edit changes the digest
            return _Module(effects=[ast.Expr(ast.Constant(path.read_bytes()))])
        found = _Module()
        for index, stmt in enumerate(tree.body):
            if _is_docstring(index, stmt):
                continue
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                found.imports.update(import_bindings(stmt))
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.defs[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                for name in names:
                    # a name assigned twice (``X = ...`` then ``X |= ...``) keeps both statements
                    previous = found.defs.get(name)
                    found.defs[name] = ast.Module([previous, stmt], []) if previous is not None else stmt  # type: ignore[assignment]
            elif isinstance(stmt, ast.If | ast.Try):  # ``if TYPE_CHECKING:`` and guarded imports
                found.imports.update(import_bindings(stmt))
                found.effects.append(stmt)
            else:
                found.effects.append(stmt)
        return found

    def closure(self, module: str, names: Iterable[str]) -> list[Piece]:
        """The definitions ``names`` of ``module`` reach, as sorted ``(label, tree)`` pieces."""
        pieces: set[Piece] = set()
        seen: set[tuple[str, str]] = set()
        todo = [(module, n) for n in names]
        touched: set[str] = set()
        while todo:
            mod, name = todo.pop()
            if (mod, name) in seen:
                continue
            seen.add((mod, name))
            info = self.module(mod)
            if info is None:
                pieces.add(("binding", f"{name}={mod}".encode()))
                continue
            pieces.update(self._effects(mod, touched))
            if name in info.defs:
                node = info.defs[name]
                pieces.add((name, tree_bytes(node)))
                local = dict(info.imports)
                local.update(import_bindings(node))
                todo.extend(self._references(node, mod, info, local))
            elif name in info.imports:
                todo.extend(self._follow(name, info.imports[name], None))
            elif self.module(f"{mod}.{name}") is not None:  # ``from pkg import module`` used whole
                todo.extend((f"{mod}.{name}", d) for d in self.module(f"{mod}.{name}").defs)  # type: ignore[union-attr]
        return sorted(pieces)

    def _effects(self, mod: str, touched: set[str]) -> set[Piece]:
        """What importing ``mod`` runs besides definitions: its own top-level statements and those
        of the package modules it imports at the top, and theirs (importing runs them all)."""
        found: set[Piece] = set()
        todo = [mod]
        while todo:
            name = todo.pop()
            info = self.module(name)
            if name in touched or info is None:
                continue
            touched.add(name)
            found.update(("effect", tree_bytes(s)) for s in info.effects)
            for module, attr in info.imports.values():
                todo.append(module)
                if attr is not None:
                    todo.append(f"{module}.{attr}")
        return found

    def _references(
        self, node: ast.AST, mod: str, info: _Module, local: dict[str, tuple[str, str | None]]
    ) -> Iterator[tuple[str, str]]:
        attributes: dict[str, set[str]] = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                attributes.setdefault(sub.value.id, set()).add(sub.attr)
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Name):
                continue
            if sub.id in local:
                yield from self._follow(sub.id, local[sub.id], attributes.get(sub.id))
            elif sub.id in info.defs:
                yield mod, sub.id

    def _follow(self, alias: str, target: tuple[str, str | None], attrs: set[str] | None) -> Iterator[tuple[str, str]]:
        module, attr = target
        if attr is not None and self.ours(module) and self.module(f"{module}.{attr}") is not None:
            module, attr = f"{module}.{attr}", None  # ``from falsifiers.pkg import module``
        if not self.ours(module):
            yield f"{module}.{attr}" if attr else module, alias
            return
        if attr is not None:
            yield module, attr
            return
        info = self.module(module)
        # a checker module used as a namespace: the attributes named on it, else all of it
        for name in sorted(attrs if attrs else (info.defs if info else ())):
            if self.module(f"{module}.{name}") is not None:
                yield from self._follow(name, (f"{module}.{name}", None), None)
            else:
                yield module, name

    def fixtures(self, module: str, function: str, files: Iterable[str]) -> list[Piece]:
        """The pytest fixtures of ``files`` (``contracts/conftest.py``: paths under the root) that the
        checker ``function`` of ``module`` requests, directly or through another fixture, and every
        autouse one, each with the definitions it reaches: what the fixtures hand the checker."""
        checker = (self.module(module) or _Module()).defs.get(function)
        if not isinstance(checker, ast.FunctionDef | ast.AsyncFunctionDef):
            return []
        found, every_test = self._fixture_files(tuple(files))
        pieces = set(every_test)
        todo = _parameters(checker) + [n for n, (_, _, autouse) in found.items() if autouse]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in found:
                continue  # a fixture pytest or a plugin provides (tmp_path, pv_artifacts)
            seen.add(name)
            where, node, _ = found[name]
            pieces.update(self.closure(where, [name]))
            todo.extend(_parameters(node))
        return sorted(pieces)

    def _fixture_files(self, files: tuple[str, ...]) -> tuple[dict[str, _Fixture], frozenset[Piece]]:
        """The fixtures ``files`` define (the nearer conftest first), and what acts on every test
        of the session whatever it requests: the hooks and what importing the files runs.  The
        same for every checker, so taken once."""
        if files not in self._fixtures:
            found: dict[str, _Fixture] = {}
            pieces: set[Piece] = set()
            for file in files:
                info = self.module(FILE + file)
                for name, node in (info.defs if info else {}).items():
                    autouse = _fixture(node)
                    if autouse is not None and name not in found:
                        found[name] = (FILE + file, node, autouse)  # type: ignore[assignment]
                    elif name.startswith("pytest_"):
                        pieces.update(self.closure(FILE + file, [name]))
                pieces.update(self._effects(FILE + file, set()))
            self._fixtures[files] = (found, frozenset(pieces))
        return self._fixtures[files]

    def whole(self, path: Path) -> list[Piece]:
        """A file every checker's verdict rests on (``contracts/conftest.py``), as its tree without
        imports plus the bindings and definitions its imports reach."""
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            return [(path.name, path.read_bytes())]
        pieces: set[Piece] = {(path.name, tree_bytes(tree))}
        for alias, target in import_bindings(tree):
            for mod, name in self._follow(alias, target, None):
                pieces.update(self.closure(mod, [name]))
        return sorted(pieces)
