"""``pv graph``: the ``depends_on`` graph, each node with its declared and evidence-backed status.

An edge ``a -> b`` means contract ``a`` depends on ``b``.  Cycles and dependencies on contracts
that do not exist are found by validate's tree rules (:func:`pv.validate.check_tree`) and
reported with their ``path:line:col``; the strongly connected components computed here only
mark which nodes and edges to draw as part of a cycle.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv import rules
from pv.diagnostics import Diagnostic
from pv.project import Project
from pv.statusview import ContractView, contract_view
from pv.validate import check_tree

FORMATS = ("text", "dot", "mermaid", "json")
_GRAPH_RULES = frozenset({rules.DEPENDENCY_CYCLE.code, rules.UNKNOWN_DEPENDENCY.code})


@dataclass
class Node:
    id: str
    path: str
    version: str | None
    status: str  # declared, or INVALID when the file does not load
    backing: str  # what the evidence supports
    depends_on: list[str] = field(default_factory=list)
    in_cycle: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "version": self.version,
            "status": self.status,
            "evidence_status": self.backing,
            "depends_on": self.depends_on,
            "in_cycle": self.in_cycle,
        }


@dataclass
class Graph:
    nodes: dict[str, Node]
    edges: list[tuple[str, str]]
    missing: list[tuple[str, str]]  # (contract, dependency that is not a contract)
    cycles: list[list[str]]  # strongly connected components with a cycle, each sorted
    diagnostics: list[Diagnostic]  # validate's cycle and unknown-dependency findings

    @property
    def ok(self) -> bool:
        return not self.cycles and not self.missing

    def in_cycle(self, a: str, b: str) -> bool:
        return any(a in c and b in c for c in self.cycles)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [n.to_json() for n in self.nodes.values()],
            "edges": [list(e) for e in self.edges],
            "missing": [list(m) for m in self.missing],
            "cycles": self.cycles,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "ok": self.ok,
        }


def _cycles(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components that hold a cycle (Kosaraju, iterative: long chains are fine)."""
    out_edges: dict[str, list[str]] = {n: [] for n in nodes}
    in_edges: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        out_edges[a].append(b)
        in_edges[b].append(a)
    order: list[str] = []
    seen: set[str] = set()
    for start in nodes:
        if start in seen:
            continue
        seen.add(start)
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(out_edges[node]):
                stack.append((node, i + 1))
                nxt = out_edges[node][i]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, 0))
            else:
                order.append(node)
    assigned: set[str] = set()
    found: list[list[str]] = []
    for start in reversed(order):
        if start in assigned:
            continue
        component = []
        todo = [start]
        assigned.add(start)
        while todo:
            node = todo.pop()
            component.append(node)
            for prev in in_edges[node]:
                if prev not in assigned:
                    assigned.add(prev)
                    todo.append(prev)
        if len(component) > 1 or (start, start) in set(edges):
            found.append(sorted(component))
    return sorted(found)


def build(project: Project, paths: Sequence[Path]) -> Graph:
    views: list[ContractView] = [contract_view(project, p) for p in paths]
    loaded = [c.loaded for c in map(project.contract, paths) if c.loaded is not None]
    nodes: dict[str, Node] = {}
    alias: dict[str, str] = {}  # a file stem names its contract too (as validate allows)
    for v, lc in zip(views, loaded, strict=True):
        status = v.declared.value if v.declared else "INVALID"
        nodes[v.id] = Node(v.id, v.rel, v.version, status, v.backing.value, list(v.depends_on))
        alias.setdefault(lc.stem, v.id)
    edges: list[tuple[str, str]] = []
    missing: list[tuple[str, str]] = []
    for n in nodes.values():
        for dep in n.depends_on:
            target = dep if dep in nodes else alias.get(dep)
            if target is None:
                missing.append((n.id, dep))
            else:
                edges.append((n.id, target))
    cycles = _cycles(list(nodes), edges)
    for c in cycles:
        for member in c:
            nodes[member].in_cycle = True
    diagnostics = [
        dataclasses.replace(d, path=project.locator(d.path)) for d in check_tree(loaded) if d.code in _GRAPH_RULES
    ]
    return Graph(nodes, edges, missing, cycles, diagnostics)


# --- renderers ----------------------------------------------------------------------------------


def _label(n: Node) -> str:
    shown = n.status if n.status == n.backing or n.status == "INVALID" else f"{n.status}, evidence {n.backing}"
    return f"{n.id} [{shown}]"


def render_text(g: Graph) -> str:
    lines: list[str] = []
    for n in sorted(g.nodes.values(), key=lambda x: x.id):
        deps = [d for a, d in g.edges if a == n.id] + [f"{d} (missing)" for a, d in g.missing if a == n.id]
        line = _label(n) + (f" -> {', '.join(deps)}" if deps else "")
        lines.append(line + ("  (in a cycle)" if n.in_cycle else ""))
    for d in g.diagnostics:
        lines.append(d.format())
    lines.append(
        f"{len(g.nodes)} contracts, {len(g.edges)} dependencies, {len(g.cycles)} cycles, "
        f"{len(g.missing)} missing dependencies"
    )
    return "\n".join(lines) + "\n"


_DOT_FILL = {"ACTIVE": "palegreen", "ACTIVE_ALGORITHM_LEVEL": "lightyellow", "DRAFT": "white", "RETIRED": "lightgrey"}


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(g: Graph) -> str:
    lines = ["digraph pv {", "  rankdir=LR;", "  node [shape=box, style=filled];"]
    for n in sorted(g.nodes.values(), key=lambda x: x.id):
        # two quoted lines joined by dot's own line break, which must stay unescaped
        label = _dot_quote(n.id)[:-1] + "\\n" + _dot_quote(f"{n.status} (evidence {n.backing})")[1:]
        fill = "salmon" if n.status == "INVALID" else _DOT_FILL.get(n.backing, "white")
        extra = ", color=red, penwidth=2" if n.in_cycle else ""
        lines.append(f"  {_dot_quote(n.id)} [label={label}, fillcolor={fill}{extra}];")
    for a, b in g.edges:
        style = " [color=red]" if g.in_cycle(a, b) else ""
        lines.append(f"  {_dot_quote(a)} -> {_dot_quote(b)}{style};")
    for a, b in g.missing:
        lines.append(f"  {_dot_quote(b)} [label={_dot_quote(b + ' (missing)')}, style=dashed, fillcolor=white];")
        lines.append(f"  {_dot_quote(a)} -> {_dot_quote(b)} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def render_mermaid(g: Graph) -> str:
    ids = {nid: f"n{i}" for i, nid in enumerate(sorted(g.nodes))}
    lines = ["flowchart LR"]
    for nid in sorted(g.nodes):
        n = g.nodes[nid]
        lines.append(f'  {ids[nid]}["{_mermaid_text(n.id)}<br/>{n.status} (evidence {n.backing})"]')
    red: list[int] = []
    k = 0
    for a, b in g.edges:
        lines.append(f"  {ids[a]} --> {ids[b]}")
        if g.in_cycle(a, b):
            red.append(k)
        k += 1
    for i, (a, b) in enumerate(g.missing):
        lines.append(f'  m{i}["{_mermaid_text(b)} (missing)"]')
        lines.append(f"  {ids[a]} -.-> m{i}")
        k += 1
    if red:
        lines.append(f"  linkStyle {','.join(map(str, red))} stroke:red")
    return "\n".join(lines) + "\n"


def render(g: Graph, fmt: str) -> str:
    if fmt == "dot":
        return render_dot(g)
    if fmt == "mermaid":
        return render_mermaid(g)
    if fmt == "json":
        return json.dumps(g.to_json(), indent=2, sort_keys=True) + "\n"
    return render_text(g)
