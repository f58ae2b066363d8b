"""Which falsifiers a change touches, by what evidence is bound to: the contract's entry, the checker
and every module it imports, the code under test, the conftests.

A falsifier is changed against a base commit when its entry in the contract differs (a moved bound
among them), when it is new, or when any file its verdict rests on (:class:`CodeScope` ``files``
with its one check, the same scope a bundle records) has other bytes at the base.  A pull request's
CI runs these, advisory ones included (``pytest --pv-changed-since REF`` marks them ``pv_changed``),
so that what it changes is measured in it and the rest is folded away in the review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.digest import declared_falsifiers
from pv.evidence.code_binding import CodeScope
from pv.project import Project, ProjectContract
from pv.review.runs import Tree


@dataclass
class Changed:
    contract_id: str
    contract_path: str  # relative to the root, POSIX
    falsifier_id: str
    reasons: list[str] = field(default_factory=list)
    bound: tuple[str | None, str | None] | None = None  # (base expect, head expect) when the bound moved
    new: bool = False


def _code_reasons(now: dict[str, str], base: dict[str, str | None], contract_rel: str) -> list[str]:
    differ = sorted(p for p, d in now.items() if p != contract_rel and base.get(p) != d)
    if not differ:
        return []
    added = [p for p in differ if base.get(p) is None]
    edited = [p for p in differ if base.get(p) is not None]
    shown = ", ".join((edited + added)[:3]) + ("…" if len(differ) > 3 else "")
    parts = [f"{len(edited)} edited"] if edited else []
    parts += [f"{len(added)} added"] if added else []
    return [f"code: {' and '.join(parts)} ({shown})"]


def changed_falsifiers(project: Project, base: str, contracts: list[Path] | None = None) -> list[Changed]:
    """Every falsifier of the contracts (default: all) that the working tree changes against ``base``.

    The files of every falsifier's scope are gathered first and hashed at ``base`` in one git call:
    most of them (the code under test, the conftests) are every falsifier's."""
    root = project.root
    tree = Tree.at(root, base)
    scope = CodeScope.of(project.config)
    paths = project.files(contracts)
    rels = {path: project.locator(path) for path in paths}
    old_bytes = tree.read(rels.values())
    checked: dict[str, dict[str, str]] = {}  # check -> the files it adds to the scope
    scopes: list[tuple[Path, dict[str, Any], dict[str, str]]] = []
    for path in paths:
        shared = scope.files(path, [])
        for entry in declared_falsifiers(project.contract(path).data):
            check = entry.get("check")
            if isinstance(check, str) and check not in checked:
                checked[check] = scope.checker_files(check)
            scopes.append((path, entry, {**shared, **checked.get(check, {})} if isinstance(check, str) else shared))
    at_base = tree.sha256({f for _, _, files in scopes for f in files})
    before: dict[Path, dict[str, dict[str, Any]]] = {}
    for path in paths:
        raw = old_bytes[rels[path]]
        old = ProjectContract.from_bytes(path, raw, project.config.dialect) if raw is not None else None
        before[path] = {t["id"]: t for t in declared_falsifiers(old.data)} if old is not None else {}
    out: list[Changed] = []
    for path, entry, files in scopes:
        rel, fid = rels[path], entry["id"]
        item = Changed(project.contract(path).id, rel, fid, _code_reasons(files, at_base, rel))
        old_entry = before[path].get(fid)
        if old_entry is None:
            item.new = True
            item.reasons.insert(0, "new falsifier" if tree.has(rel) else "new contract")
        elif old_entry != entry:
            if old_entry.get("expect") != entry.get("expect"):
                item.bound = (_text(old_entry.get("expect")), _text(entry.get("expect")))
                item.reasons.insert(0, "bound moved")
            keys = sorted(k for k in {*old_entry, *entry} if k != "expect" and old_entry.get(k) != entry.get(k))
            if keys:
                item.reasons.insert(0, f"contract: {', '.join(keys)} changed")
        if item.reasons:
            out.append(item)
    return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
