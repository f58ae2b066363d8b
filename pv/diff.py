"""What changed between two versions of a contract, and the semantic-version bump it requires.

This module is the one place where bump rules live; ``pv diff`` prints them and lint's
``changelog`` gate rejects a version that did not bump enough against the contract at ``HEAD``.

The rules: removing a falsifier, obligation or other declared item, loosening a bound, or making
a ship-blocking falsifier advisory is **major**; adding one, tightening a bound, or changing what
is measured or how it runs (params, checker, mutant, requirements, ``launch``) is **minor**; rewording is **patch**.
``metadata.status``, ``metadata.version`` and the changelog are never counted: ``pv promote``
writes the first and the other two record the bump itself.

Bound direction.  Two ``expect`` predicates are compared structurally with :mod:`pv.expr`: when
they have the same shape and only numeric literals moved, each literal's direction is read off
its place in the expression.  ``A <= B`` admits more when ``B`` grows or ``A`` shrinks; that
direction is carried down through ``+``, ``-``, multiplication by a term of known sign (a
literal, or a term the falsifier's params evaluate), monotone functions (``ln``, ``sqrt``,
``exp``, ``min``, ``max``…), ``and``/``or`` and ``not``.  A literal under ``==``, ``!=`` or ``in``,
or anywhere the direction cannot be told, is a major "bound changed", with the reason.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

from pv import expr
from pv.cases import CaseError, expand_spec
from pv.git import GitError, run_git
from pv.loader import CONTRACT_SUFFIXES, LoadedContract, load_contract_file
from pv.model import Contract
from pv.semver import parts as semver_parts
from pv.semver import semver_key


class Bump(IntEnum):
    NONE = 0
    PATCH = 1
    MINOR = 2
    MAJOR = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Change:
    """One difference: ``section`` (falsifiers, obligations, metadata…), the item, what happened."""

    section: str
    subject: str
    kind: str  # added | removed | loosened | tightened | changed | reworded
    bump: Bump
    detail: str

    def to_json(self) -> dict[str, str]:
        return {
            "section": self.section,
            "subject": self.subject,
            "kind": self.kind,
            "bump": self.bump.label,
            "detail": self.detail,
        }


@dataclass
class ContractDiff:
    """The changes from ``old`` to ``new`` and whether the declared version bump covers them."""

    name: str  # what the diff is about (a path, or "OLD -> NEW")
    old_version: str
    new_version: str
    changes: list[Change] = field(default_factory=list)

    @property
    def required(self) -> Bump:
        return max((c.bump for c in self.changes), default=Bump.NONE)

    @property
    def declared(self) -> Bump | None:
        """The bump the versions show; None when one is not semver or the version went down."""
        return version_bump(self.old_version, self.new_version)

    @property
    def sufficient(self) -> bool:
        declared = self.declared
        return declared is not None and declared >= self.required

    def verdict(self) -> str:
        """One line: the required bump against the declared one."""
        declared = self.declared
        shown = f"{self.old_version} -> {self.new_version}"
        if declared is None:
            return f"required bump: {self.required.label}; declared: {shown} is not an increase of a semantic version"
        ok = "ok" if self.sufficient else "NOT ENOUGH"
        return f"required bump: {self.required.label}; declared: {declared.label} ({shown}): {ok}"

    def to_json(self) -> dict[str, Any]:
        declared = self.declared
        return {
            "name": self.name,
            "old_version": self.old_version,
            "new_version": self.new_version,
            "required": self.required.label,
            "declared": declared.label if declared is not None else None,
            "sufficient": self.sufficient,
            "changes": [c.to_json() for c in self.changes],
        }


# --- versions -----------------------------------------------------------------------------------


def version_bump(old: str, new: str) -> Bump | None:
    """The bump from ``old`` to ``new``; None when either is not semver or ``new`` is lower."""
    a, b = semver_parts(old), semver_parts(new)
    ka, kb = semver_key(old), semver_key(new)
    if a is None or b is None or ka is None or kb is None:
        return None
    if kb < ka:
        return None
    if b[0] != a[0]:
        return Bump.MAJOR
    if b[1] != a[1]:
        return Bump.MINOR
    if b[2] != a[2]:
        return Bump.PATCH
    # same numbers: a pre-release moved on (1.1.0-rc.1 -> 1.1.0) or nothing changed
    return Bump.PATCH if kb > ka else Bump.NONE


# --- bounds -------------------------------------------------------------------------------------

_MONOTONE_CALLS = frozenset({"ln", "log", "log2", "log10", "sqrt", "exp", "min", "max"})
_UPPER = (ast.Lt, ast.LtE)  # `A < B`: admits more as B grows, as A shrinks
_LOWER = (ast.Gt, ast.GtE)  # `A > B`: admits more as A grows, as B shrinks


@dataclass(frozen=True)
class _Moved:
    old: float
    new: float
    direction: int  # +1: a larger value admits more; -1: a smaller one does; 0: cannot tell
    why: str  # when direction is 0: the reason


class _ShapeDiffers(Exception):
    pass


def _number(node: ast.AST) -> float | None:
    """A numeric literal's value; ``-1`` is a unary minus over ``1`` in Python's tree."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _sign(node: ast.AST, env: Mapping[str, Any]) -> int:
    """The sign of a sub-expression when the params alone decide it (else 0)."""
    try:
        value = expr.parse(ast.unparse(node)).evaluate(env)
    except Exception:  # needs an observation, or fails: its sign is not known before the run
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return (value > 0) - (value < 0)


class _BoundWalker:
    """Walks two expression trees side by side, recording each numeric literal that moved."""

    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env = env
        self.moved: list[_Moved] = []

    def walk(self, a: ast.AST, b: ast.AST, direction: int, why: str) -> None:
        na, nb = _number(a), _number(b)
        if na is not None and nb is not None:
            if na != nb:
                self.moved.append(_Moved(na, nb, direction, why))
            return
        if type(a) is not type(b):
            raise _ShapeDiffers
        if isinstance(a, ast.Constant):
            if not isinstance(b, ast.Constant) or type(a.value) is not type(b.value) or a.value != b.value:
                raise _ShapeDiffers
            return
        if isinstance(a, ast.Name):
            if not isinstance(b, ast.Name) or a.id != b.id:
                raise _ShapeDiffers
            return
        for (fa, va), (_, vb) in zip(ast.iter_fields(a), ast.iter_fields(b), strict=True):
            if fa == "ctx":
                continue
            if isinstance(va, list) and isinstance(vb, list):
                if len(va) != len(vb):
                    raise _ShapeDiffers
                for x, y in zip(va, vb, strict=True):
                    if type(x) is not type(y) and (_number(x) is None or _number(y) is None):
                        raise _ShapeDiffers
            elif isinstance(va, ast.AST) and isinstance(vb, ast.AST):
                if type(va) is not type(vb) and (_number(va) is None or _number(vb) is None):
                    raise _ShapeDiffers
            elif va != vb:
                raise _ShapeDiffers
        for child_a, child_b, d, reason in self._children(a, b, direction, why):
            self.walk(child_a, child_b, d, reason)

    def _children(self, a: ast.AST, b: ast.AST, d: int, why: str) -> Iterator[tuple[ast.AST, ast.AST, int, str]]:
        if isinstance(a, ast.Compare) and isinstance(b, ast.Compare):
            operands_a = [a.left, *a.comparators]
            operands_b = [b.left, *b.comparators]
            for k, (xa, xb) in enumerate(zip(operands_a, operands_b, strict=True)):
                yield xa, xb, *self._compare_direction(a.ops, k, d)
            return
        if isinstance(a, ast.BoolOp) and isinstance(b, ast.BoolOp):
            for xa, xb in zip(a.values, b.values, strict=True):
                yield xa, xb, d, why
            return
        if isinstance(a, ast.UnaryOp) and isinstance(b, ast.UnaryOp):
            flips = isinstance(a.op, ast.USub | ast.Not)
            yield a.operand, b.operand, -d if flips else d, why
            return
        if isinstance(a, ast.BinOp) and isinstance(b, ast.BinOp):
            yield from self._binop(a, b, d, why)
            return
        if isinstance(a, ast.Call) and isinstance(b, ast.Call):
            name = a.func.id if isinstance(a.func, ast.Name) else ""
            if not isinstance(b.func, ast.Name) or b.func.id != name:
                raise _ShapeDiffers
            for i, (xa, xb) in enumerate(zip(a.args, b.args, strict=True)):
                if name in _MONOTONE_CALLS and not (name == "log" and i == 1):
                    yield xa, xb, d, why
                else:
                    yield xa, xb, 0, f"a literal inside {name}() moved, which is not monotone in it"
            return
        if isinstance(a, ast.IfExp) and isinstance(b, ast.IfExp):
            yield a.test, b.test, 0, "a literal in a conditional's test moved"
            yield a.body, b.body, d, why
            yield a.orelse, b.orelse, d, why
            return
        if isinstance(a, ast.List | ast.Tuple) and isinstance(b, ast.List | ast.Tuple):
            for xa, xb in zip(a.elts, b.elts, strict=True):
                yield xa, xb, 0, "a listed value changed"
            return
        for ca, cb in zip(ast.iter_child_nodes(a), ast.iter_child_nodes(b), strict=True):
            yield ca, cb, 0, f"a literal inside a {type(a).__name__} moved"

    @staticmethod
    def _compare_direction(ops: Sequence[ast.cmpop], k: int, polarity: int) -> tuple[int, str]:
        """Direction for operand ``k`` of a comparison chain, under the chain's polarity."""
        sides: list[tuple[ast.cmpop, bool]] = []  # (operator, whether the operand is its right side)
        if k > 0:
            sides.append((ops[k - 1], True))
        if k < len(ops):
            sides.append((ops[k], False))
        votes: set[int] = set()
        for op, right in sides:
            if isinstance(op, _UPPER):
                votes.add(1 if right else -1)
            elif isinstance(op, _LOWER):
                votes.add(-1 if right else 1)
            else:
                return 0, f"a literal compared with {_OP_TEXT.get(type(op), type(op).__name__)} changed"
        if len(votes) != 1:
            return 0, "a literal between two comparisons moved"
        if polarity == 0:
            return 0, "a comparison whose effect on the predicate is not known moved"
        return votes.pop() * polarity, ""

    def _binop(self, a: ast.BinOp, b: ast.BinOp, d: int, why: str) -> Iterator[tuple[ast.AST, ast.AST, int, str]]:
        op = a.op
        if d == 0:
            # the direction is already unknown above this node; keep the reason found there
            yield a.left, b.left, 0, why
            yield a.right, b.right, 0, why
        elif isinstance(op, ast.Add):
            yield a.left, b.left, d, why
            yield a.right, b.right, d, why
        elif isinstance(op, ast.Sub):
            yield a.left, b.left, d, why
            yield a.right, b.right, -d, why
        elif isinstance(op, ast.Mult):
            unknown = "a literal times a term whose sign is not known from the params moved"
            yield a.left, b.left, d * self._sign(a.right, b.right), unknown
            yield a.right, b.right, d * self._sign(a.left, b.left), unknown
        elif isinstance(op, ast.Div):
            # x / c grows with x when c > 0; d(x/c)/dc = -x/c², so it falls with c when x > 0
            # (as long as c keeps its sign, which _sign requires of old and new alike)
            unknown = "a literal in a division whose terms' signs are not known from the params moved"
            divisor = self._sign(a.right, b.right)
            yield a.left, b.left, d * divisor, unknown
            yield a.right, b.right, -d * self._sign(a.left, b.left) * abs(divisor), unknown
        else:
            reason = f"a literal under {_BINOP_TEXT.get(type(op), '?')} moved"
            yield a.left, b.left, 0, reason
            yield a.right, b.right, 0, reason

    def _sign(self, old: ast.AST, new: ast.AST) -> int:
        """The sign of a term before and after the change, when the params decide it and it held."""
        sa, sb = _sign(old, self.env), _sign(new, self.env)
        return sa if sa == sb else 0


_OP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in"}
_BINOP_TEXT = {ast.Mod: "%", ast.FloorDiv: "//", ast.Pow: "**"}


def bound_change(old: str, new: str, params: Mapping[str, Any] | None = None) -> tuple[Bump, str, str]:
    """Compare two ``expect`` predicates: (bump, kind, detail); ``Bump.NONE`` when they are the same.

    ``params`` (the falsifier's, after the change) let the sign of a term such as ``ln(vocab_size)``
    be known, so that ``x <= 0.7 * ln(vocab_size)`` has a direction.
    """
    if old == new:
        return Bump.NONE, "", ""
    shown = f"{old!r} -> {new!r}"
    try:
        pa, pb = expr.parse(old), expr.parse(new)
    except expr.ExprError as exc:
        return Bump.MAJOR, "changed", f"bound changed: {shown} ({exc})"
    walker = _BoundWalker(params or {})
    try:
        walker.walk(pa.tree.body, pb.tree.body, 1, "")
    except (_ShapeDiffers, ValueError):
        return Bump.MAJOR, "changed", f"bound changed: {shown} (the expression's shape differs)"
    if not walker.moved:
        return Bump.PATCH, "reworded", f"expect rewritten without changing its meaning: {shown}"
    unknown = [m for m in walker.moved if m.direction == 0]
    if unknown:
        return Bump.MAJOR, "changed", f"bound changed: {shown} ({unknown[0].why})"
    loosened = [m for m in walker.moved if (m.new - m.old) * m.direction > 0]
    if loosened:
        return Bump.MAJOR, "loosened", f"bound loosened: {shown}"
    return Bump.MINOR, "tightened", f"bound tightened: {shown}"


# --- contracts ----------------------------------------------------------------------------------

# Falsifier fields and the bump a change to each one needs (expect, ship_blocking and mutant are
# judged separately, by direction).
_FALSIFIER_WORDING = ("rule", "prediction", "test", "if_fails")
_FALSIFIER_MEASUREMENT = ("check", "requires", "obligation", "timeout_s", "slow", "hypothesis", "examples", "launch")
_METADATA_WORDING = ("description", "references", "author", "created", "tags", "registry")
_METADATA_IGNORED = frozenset({"status", "version", "changelog"})


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _keyed(items: Iterable[Any], prefix: str) -> dict[str, dict[str, Any]]:
    """Items by id (by position when an item has none, as the Rust dialect allows)."""
    out: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        data = item.model_dump(mode="json")
        out[str(data.get("id") or f"{prefix}[{i}]")] = data
    return out


def _params_changes(fid: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    parts = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            parts.append(f"-{key}")
        elif key not in old:
            parts.append(f"+{key}={_short(new[key], 30)}")
        elif old[key] != new[key]:
            parts.append(f"{key}: {_short(old[key], 30)} -> {_short(new[key], 30)}")
    if parts:
        yield Change("falsifiers", fid, "changed", Bump.MINOR, "params changed: " + ", ".join(parts))


def _predicate_changes(fid: str, key: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """``expect`` or ``aggregate``: added (minor), removed (major), or a bound that moved."""
    was, now = old.get(key), new.get(key)
    if was == now:
        return
    if was is None:
        yield Change("falsifiers", fid, "added", Bump.MINOR, f"{key} added: {now!r}")
    elif now is None:
        yield Change("falsifiers", fid, "removed", Bump.MAJOR, f"{key} removed (was {was!r})")
    else:
        bump, kind, detail = bound_change(was, now, new.get("params") or {})
        yield Change("falsifiers", fid, kind, bump, detail if key == "expect" else f"{key} {detail}")


def _falsifier_changes(fid: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    yield from _predicate_changes(fid, "expect", old, new)
    yield from _params_changes(fid, old.get("params") or {}, new.get("params") or {})
    yield from _case_changes(fid, old, new)
    if old.get("ship_blocking") != new.get("ship_blocking"):
        if new.get("ship_blocking"):
            yield Change("falsifiers", fid, "tightened", Bump.MINOR, "now ship-blocking")
        else:
            yield Change("falsifiers", fid, "loosened", Bump.MAJOR, "no longer ship-blocking (now advisory)")
    om, nm = old.get("mutant"), new.get("mutant")
    if om != nm:
        if nm is None:
            yield Change("falsifiers", fid, "removed", Bump.MAJOR, f"mutant removed (was {om})")
        else:
            yield Change("falsifiers", fid, "changed", Bump.MINOR, f"mutant {om} -> {nm}")
    for key in _FALSIFIER_MEASUREMENT:
        if old.get(key) != new.get(key):
            detail = f"{key}: {_short(old.get(key), 40)} -> {_short(new.get(key), 40)}"
            yield Change("falsifiers", fid, "changed", Bump.MINOR, detail)
    reworded = [k for k in _FALSIFIER_WORDING if old.get(k) != new.get(k)]
    if reworded:
        yield Change("falsifiers", fid, "reworded", Bump.PATCH, f"reworded: {', '.join(reworded)}")


def _case_ids(f: dict[str, Any]) -> list[str]:
    try:
        return [c.id for c in expand_spec(f.get("parametrize"), f.get("seeds"), f.get("params") or {})]
    except (CaseError, TypeError, AttributeError):
        return []


def _case_changes(fid: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """Dropping a case narrows the claim (major); adding one widens it (minor); the aggregate is a bound."""
    was, now = _case_ids(old), _case_ids(new)
    dropped = [c for c in was if c not in now]
    added = [c for c in now if c not in was]
    if dropped:
        shown = ", ".join(f"[{c}]" for c in dropped)
        yield Change("falsifiers", fid, "removed", Bump.MAJOR, f"cases dropped: {shown[:80]}")
    if added:
        shown = ", ".join(f"[{c}]" for c in added)
        yield Change("falsifiers", fid, "added", Bump.MINOR, f"cases added: {shown[:80]}")
    yield from _predicate_changes(fid, "aggregate", old, new)


def _obligation_changes(oid: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    ot, nt = old.get("tolerance"), new.get("tolerance")
    if ot != nt:
        if isinstance(ot, int | float) and isinstance(nt, int | float):
            if nt > ot:
                yield Change("obligations", oid, "loosened", Bump.MAJOR, f"tolerance loosened: {ot} -> {nt}")
            else:
                yield Change("obligations", oid, "tightened", Bump.MINOR, f"tolerance tightened: {ot} -> {nt}")
        else:
            yield Change("obligations", oid, "changed", Bump.MAJOR, f"tolerance {ot} -> {nt}")
    for key in ("type", "formal", "applies_to", "requires", "parent_contract"):
        if old.get(key) != new.get(key):
            detail = f"{key}: {_short(old.get(key), 40)} -> {_short(new.get(key), 40)}"
            yield Change("obligations", oid, "changed", Bump.MINOR, detail)
    reworded = [k for k in ("property", "lean") if old.get(k) != new.get(k)]
    if reworded:
        yield Change("obligations", oid, "reworded", Bump.PATCH, f"reworded: {', '.join(reworded)}")


def _set_changes(
    section: str,
    old: Mapping[str, dict[str, Any]],
    new: Mapping[str, dict[str, Any]],
    noun: str,
) -> Iterator[Change]:
    for key in sorted(set(old) - set(new)):
        yield Change(section, key, "removed", Bump.MAJOR, f"{noun} removed")
    for key in sorted(set(new) - set(old)):
        yield Change(section, key, "added", Bump.MINOR, f"{noun} added")


def _metadata_changes(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    if old.get("id") != new.get("id"):
        yield Change("metadata", "id", "changed", Bump.MAJOR, f"contract id {old.get('id')} -> {new.get('id')}")
    if old.get("kind") != new.get("kind"):
        yield Change("metadata", "kind", "changed", Bump.MINOR, f"kind {old.get('kind')} -> {new.get('kind')}")
    od, nd = set(old.get("depends_on") or []), set(new.get("depends_on") or [])
    for dep in sorted(nd - od):
        yield Change("metadata", "depends_on", "added", Bump.MINOR, f"now depends on {dep}")
    for dep in sorted(od - nd):
        yield Change("metadata", "depends_on", "removed", Bump.MINOR, f"no longer depends on {dep}")
    for key in _METADATA_WORDING:
        if old.get(key) != new.get(key):
            yield Change("metadata", key, "reworded", Bump.PATCH, f"{key} changed")


def _other_sections(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """Sections pv does not execute (equations, Kani harnesses, QA gate…): documented claims."""
    handled = {"metadata", "proof_obligations", "falsification_tests"}
    for section in sorted((set(old) | set(new)) - handled):
        a, b = old.get(section), new.get(section)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            ka = {str(k): v for k, v in a.items()}
            kb = {str(k): v for k, v in b.items()}
        elif isinstance(a, list) and isinstance(b, list) and section == "kani_harnesses":
            ka = {str(x.get("id", i)): x for i, x in enumerate(a)}
            kb = {str(x.get("id", i)): x for i, x in enumerate(b)}
        else:
            bump = Bump.PATCH if section == "verification_summary" else Bump.MINOR
            kind = "added" if not a else "removed" if not b else "changed"
            if kind == "removed" and bump is Bump.MINOR:
                bump = Bump.MAJOR
            yield Change(section, section, kind, bump, f"{section} {kind}")
            continue
        yield from _set_changes(section, ka, kb, "entry")
        for key in sorted(set(ka) & set(kb)):
            if ka[key] != kb[key]:
                only_words = (
                    isinstance(ka[key], dict)
                    and isinstance(kb[key], dict)
                    and all(ka[key].get(f) == kb[key].get(f) for f in set(ka[key]) | set(kb[key]) if f != "description")
                )
                bump = Bump.PATCH if only_words or section == "verification_summary" else Bump.MINOR
                yield Change(section, key, "reworded" if bump is Bump.PATCH else "changed", bump, f"{key} changed")


def diff_contracts(old: Contract, new: Contract, name: str = "") -> ContractDiff:
    """Every change from ``old`` to ``new``, by section, each with the bump it needs."""
    a = old.model_dump(mode="json", exclude_defaults=False)
    b = new.model_dump(mode="json", exclude_defaults=False)
    changes: list[Change] = []

    fa = _keyed(old.falsification_tests, "falsification_tests")
    fb = _keyed(new.falsification_tests, "falsification_tests")
    changes.extend(_set_changes("falsifiers", fa, fb, "falsifier"))
    for fid in sorted(set(fa) & set(fb)):
        changes.extend(_falsifier_changes(fid, fa[fid], fb[fid]))

    oa = _keyed(old.proof_obligations, "proof_obligations")
    ob = _keyed(new.proof_obligations, "proof_obligations")
    changes.extend(_set_changes("obligations", oa, ob, "obligation"))
    for oid in sorted(set(oa) & set(ob)):
        changes.extend(_obligation_changes(oid, oa[oid], ob[oid]))

    ma = {k: v for k, v in a["metadata"].items() if k not in _METADATA_IGNORED}
    mb = {k: v for k, v in b["metadata"].items() if k not in _METADATA_IGNORED}
    changes.extend(_metadata_changes(ma, mb))
    changes.extend(_other_sections(a, b))
    return ContractDiff(
        name=name or f"{old.metadata.id or '?'} -> {new.metadata.id or '?'}",
        old_version=old.metadata.version,
        new_version=new.metadata.version,
        changes=changes,
    )


SECTION_ORDER = ("falsifiers", "obligations", "metadata")
_MARK = {"added": "+", "removed": "-", "loosened": "~", "tightened": "~", "changed": "~", "reworded": "~"}


def format_text(diff: ContractDiff) -> list[str]:
    """The diff as indented lines, grouped by section, each change with its bump."""
    lines = [f"{diff.name}: {diff.old_version} -> {diff.new_version}"]
    if not diff.changes:
        lines.append("  no changes that need a version bump")
    sections = sorted(
        {c.section for c in diff.changes},
        key=lambda s: (s not in SECTION_ORDER, SECTION_ORDER.index(s) if s in SECTION_ORDER else 0, s),
    )
    for section in sections:
        lines.append(f"  {section}:")
        for c in (c for c in diff.changes if c.section == section):
            lines.append(f"    {_MARK.get(c.kind, '~')} {c.subject}: {c.detail}  [{c.bump.label}]")
    lines.append(f"  {diff.verdict()}")
    return lines


# --- git ----------------------------------------------------------------------------------------


def _git(cwd: Path, *args: str, binary: bool = False) -> Any:
    return run_git(cwd, *args, binary=binary)  # type: ignore[call-overload]


def git_toplevel(path: Path) -> Path | None:
    """The work tree holding ``path``, or None without git or outside a repository."""
    start = path if path.is_dir() else path.parent
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").strip()).resolve()
    except GitError:
        return None


def verify_ref(top: Path, ref: str) -> None:
    """Raise :class:`GitError` unless ``ref`` names a commit."""
    if ref.startswith("-"):
        raise GitError(f"{ref!r} is not a git ref")
    try:
        _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except GitError:
        raise GitError(f"{ref!r} does not name a commit in {top}") from None


def repository_with_ref(path: Path, ref: str) -> Path:
    """The work tree holding ``path``, after checking that ``ref`` names a commit in it.

    Raises :class:`GitError` naming what is wrong (no git, not a repository, unknown ref).
    """
    top = git_toplevel(path)
    if top is None:
        raise GitError(f"{path} is not inside a git repository (or git is not installed)")
    verify_ref(top, ref)
    return top


def _split_z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _is_contract(rel: str) -> bool:
    return rel.endswith(CONTRACT_SUFFIXES)


def changed_files(top: Path, ref: str, dirs: Sequence[Path], *, untracked: bool = True) -> list[str]:
    """Contract files (relative to ``top``) under ``dirs`` that differ between ``ref`` and the work tree."""
    rels = []
    for d in dirs:
        try:
            rels.append(d.resolve().relative_to(top).as_posix() or ".")
        except ValueError:
            continue
    if not rels:
        return []
    found = set(_split_z(_git(top, "diff", "--name-only", "-z", "--no-renames", ref, "--", *rels)))
    if untracked:
        found |= set(_split_z(_git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", *rels)))
    return sorted(p for p in found if _is_contract(p))


def show(top: Path, ref: str, rel: str) -> bytes | None:
    """The bytes of ``rel`` at ``ref``, or None if it did not exist there."""
    try:
        data: bytes = _git(top, "show", f"{ref}:{rel}", binary=True)
    except GitError:
        return None
    return data


def load_bytes(data: bytes, name: str, shown: str) -> LoadedContract:
    """Load contract bytes that are not a file of the work tree (from git) with the usual loader;
    diagnostics name ``shown`` (``REF:path``)."""
    with tempfile.TemporaryDirectory(prefix="pv-diff-") as tmp:
        path = Path(tmp) / os.path.basename(name)
        path.write_bytes(data)
        loaded = load_contract_file(path)
    loaded.diagnostics = [dataclasses.replace(d, path=shown) for d in loaded.diagnostics]
    loaded.path = Path(shown)
    return loaded


def previous_contracts(paths: Sequence[Path], ref: str = "HEAD") -> dict[Path, Contract]:
    """The contracts among ``paths`` that changed since ``ref``, as they were at ``ref``.

    Empty when git is unavailable, the files are not in a repository, ``ref`` does not exist (a
    repository without commits) or nothing changed: there is then nothing to compare with.  Only
    the changed files are read from git, so an unchanged tree costs one ``git diff``.
    """
    resolved = [p.resolve() for p in paths]
    if not resolved:
        return {}
    top = git_toplevel(Path(os.path.commonpath([str(p.parent) for p in resolved])))
    if top is None:
        return {}
    try:
        verify_ref(top, ref)
        changed = set(changed_files(top, ref, sorted({p.parent for p in resolved}), untracked=False))
    except GitError:
        return {}
    out: dict[Path, Contract] = {}
    for p in resolved:
        try:
            rel = p.relative_to(top).as_posix()
        except ValueError:
            continue
        if rel not in changed:
            continue
        data = show(top, ref, rel)
        if data is None:
            continue
        loaded = load_bytes(data, p.name, f"{ref}:{rel}")
        if loaded.contract is not None:
            out[p] = loaded.contract
    return out
