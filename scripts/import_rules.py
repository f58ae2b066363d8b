"""The repository's import rules, checked: ``python scripts/import_rules.py [ROOT]`` (exit 1 on a breach).

1. **No loop.** Among the modules of ``pv``, ``engine`` and ``falsifiers`` (imports inside functions
   included: a function-level import hides a loop from the interpreter, not from the design), and
   among the rooms of each package: a subpackage counts as one room beside the package's modules,
   so ``pv/bundle`` importing ``pv.config`` while ``pv.config`` imports ``pv.bundle`` is a loop even
   though no two files import each other.  An edge goes to each module whose names are used:
   ``from pkg import submodule`` is an edge to the submodule alone.
2. **A lazy import says why.** An import inside a function has its reason beside it: a comment on
   its line or above its group of imports, or a paragraph of the module's docstring that starts
   ``Imports inside functions:`` and names the imported package.
3. **Checker families stay apart** (``falsifiers/__init__.py``): a module of
   ``falsifiers/<family>/`` imports no other family; ``falsifiers/shared/`` imports no family.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("pv", "engine", "falsifiers")
# where rule 2 applies besides the packages: the repository's scripts, benchmarks and fixtures
LAZY_CHECKED = (*PACKAGES, "scripts", "bench", "contracts", "conftest.py", "noxfile.py")
SHARED = "shared"
REASON_PARAGRAPH = "Imports inside functions:"


@dataclass(frozen=True)
class Breach:
    rule: str
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.rule}: {self.what}"


def _modules(root: Path, package: str) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted((root / package).rglob("*.py"))
    }


def _targets(node: ast.AST, mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        submodules = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
        names = len(submodules) < len(node.names)
        return [*([node.module] if names else []), *submodules]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def module_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, at the top or inside a function."""
    mods = _modules(root, package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            graph[name].update(t for t in _targets(node, mods) if t in mods and t != name)
    return graph


def rooms(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The graph of each package's rooms: a subpackage is one room beside its parent's modules."""
    out: dict[str, set[str]] = {}
    for parent in sorted({m.rsplit(".", 1)[0] for m in graph if "." in m} | {package}):
        depth = parent.count(".") + 1

        def room(module: str, depth: int = depth, parent: str = parent) -> str | None:
            if not module.startswith(parent + "."):
                return None
            return ".".join(module.split(".")[: depth + 1])

        for src, targets in graph.items():
            a = room(src)
            if a is None:
                continue
            for t in targets:
                b = room(t)
                if b is not None and b != a:
                    out.setdefault(a, set()).add(b)
                    out.setdefault(b, set())
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def loops(root: Path) -> Iterator[Breach]:
    for package in PACKAGES:
        if not (root / package).is_dir():
            continue
        graph = module_graph(root, package)
        for group in cycles(graph):
            yield Breach("loop", package, " <-> ".join(group))
        for group in cycles(rooms(graph, package)):
            if not all(m in graph and not (root / m.replace(".", "/")).is_dir() for m in group):
                yield Breach("loop between rooms", package, " <-> ".join(group))


def _function_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    yield node


def _reason_paragraph(tree: ast.Module) -> str:
    doc = ast.get_docstring(tree) or ""
    for paragraph in re.split(r"\n\s*\n", doc):
        if paragraph.strip().startswith(REASON_PARAGRAPH):
            return paragraph
    return ""


def _head(node: ast.Import | ast.ImportFrom) -> str:
    name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
    return (name or ".").split(".")[0]


def unexplained(path: Path) -> Iterator[tuple[int, str]]:
    """(line, statement) of each import inside a function of ``path`` that gives no reason."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    paragraph = _reason_paragraph(tree)
    spans = {(n.lineno, n.end_lineno or n.lineno) for n in _function_imports(tree)}
    inside = {i for start, end in spans for i in range(start, end + 1)}
    for node in sorted(set(_function_imports(tree)), key=lambda n: n.lineno):
        if any("#" in lines[i - 1] for i in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            continue
        above = node.lineno - 1
        while above in inside or (above >= 1 and not lines[above - 1].strip()):
            above -= 1
        if above >= 1 and lines[above - 1].strip().startswith("#"):
            continue
        if paragraph and re.search(rf"\b{re.escape(_head(node))}\b", paragraph):
            continue
        yield node.lineno, ast.unparse(node)


def lazy_imports(root: Path) -> Iterator[Breach]:
    for entry in LAZY_CHECKED:
        base = root / entry
        paths = [base] if base.is_file() else sorted(base.rglob("*.py")) if base.is_dir() else []
        for path in paths:
            if "fixtures" in path.relative_to(root).parts:
                continue
            for line, statement in unexplained(path):
                where = f"{path.relative_to(root).as_posix()}:{line}"
                yield Breach("import inside a function without its reason", where, statement)


def families(root: Path) -> Iterator[Breach]:
    folder = root / "falsifiers"
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).parts
        if len(parts) < 2:
            continue
        family = parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if not name.startswith("falsifiers."):
                    continue
                other = name.split(".")[1]
                allowed = {SHARED} if family == SHARED else {family, SHARED}
                if other not in allowed:
                    where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
                    yield Breach(
                        "a checker family imports another", where, f"{name} (move what both use to falsifiers/shared/)"
                    )


def breaches(root: Path) -> list[Breach]:
    return [*loops(root), *lazy_imports(root), *families(root)]


def main(argv: Iterable[str] = sys.argv[1:]) -> int:
    args = list(argv)
    root = Path(args[0] if args else Path(__file__).resolve().parents[1])
    found = breaches(root)
    for breach in found:
        print(breach)
    print(f"{len(found)} breaches of the import rules" if found else "import rules: kept")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
