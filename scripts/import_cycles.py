"""Import cycles among pv's modules, function-level imports included: ``python scripts/import_cycles.py [ROOT]``.

A function-level import hides a cycle from the interpreter, not from the design; this counts the
strongly connected groups of the module graph (Tarjan) and prints each one.  An edge goes to each
module whose names are used: ``from pkg import submodule`` is an edge to the submodule alone (a
package's ``__init__`` running first is how every package works, not a dependency on its API).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_graph(root: Path) -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for path in (root / "pv").rglob("*.py"):
        mods[".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from pkg import submodule` depends on the submodule; `from pkg import name`, on pkg
                submodules = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
                names = len(submodules) < len(node.names)
                targets = [*([node.module] if names else []), *submodules]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    groups = cycles(module_graph(root))
    for g in groups:
        print(f"{len(g)} modules: {', '.join(g)}")
    largest = max(map(len, groups), default=0)
    print(f"{len(groups)} cyclic groups, {sum(map(len, groups))} modules in them, largest {largest}")


if __name__ == "__main__":
    main()
