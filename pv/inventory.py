"""``pv inventory``: what the contracts never look at.

Two lists a team reads as a to-do list for its contracts:

* per checker, the observations it returns (``@checker(observes=...)``) and those no ``expect``
  or ``aggregate`` of any falsifier bound to it reads: a measured value nobody makes a claim about
  is either there for the evidence's reader (fine, but say so) or a claim nobody makes;
* per registered fault (every ``FAULTS`` registry in the checker and fault packages, and every one
  a mutant names), the falsifiers that declare it as their mutant and whether the newest current,
  verified evidence shows it killed: a fault nothing kills is a bug the contracts would not notice.

Fault registries are found without importing anything that does not define one: a module is
imported only when its source constructs a ``FaultRegistry`` (or a mutant names it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.cases import parametrized_names
from pv.checkers import CheckerBindingError, CheckerSpec, discover
from pv.config import ensure_importable
from pv.expr import ExprError, parse
from pv.faults import REGISTRY_ATTR, resolve_mutant
from pv.model import FalsificationTest
from pv.project import Project
from pv.statusview import ContractView


@dataclass
class CheckerInventory:
    ref: str
    observes: list[str]
    falsifiers: list[str] = field(default_factory=list)
    read: set[str] = field(default_factory=set)

    @property
    def unread(self) -> list[str]:
        return [name for name in self.observes if name not in self.read]

    def to_json(self) -> dict[str, Any]:
        return {
            "checker": self.ref,
            "falsifiers": self.falsifiers,
            "observes": self.observes,
            "read": sorted(self.read),
            "unread": self.unread,
        }


@dataclass
class FaultInventory:
    ref: str  # module:name
    description: str
    mutant_of: list[str] = field(default_factory=list)  # contract:FALSIFY id declaring it
    killed_by: list[str] = field(default_factory=list)  # of those, the ones whose evidence shows it killed

    @property
    def state(self) -> str:
        if not self.mutant_of:
            return "no falsifier"
        return "killed" if self.killed_by else "not killed in evidence"

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.ref,
            "description": self.description,
            "mutant_of": self.mutant_of,
            "killed_by": self.killed_by,
            "state": self.state,
        }


@dataclass
class Inventory:
    checkers: list[CheckerInventory]
    faults: list[FaultInventory]
    problems: list[str] = field(default_factory=list)  # packages or mutants that did not import

    def summary(self) -> str:
        observations = sum(len(c.observes) for c in self.checkers)
        unread = sum(len(c.unread) for c in self.checkers)
        unused = sum(1 for c in self.checkers if not c.falsifiers)
        no_falsifier = sum(1 for f in self.faults if f.state == "no falsifier")
        not_killed = sum(1 for f in self.faults if f.state == "not killed in evidence")
        return (
            f"{len(self.checkers)} checkers ({unused} bound to no falsifier), {observations} observations, "
            f"{unread} read by no expect; {len(self.faults)} registered faults, {no_falsifier} the mutant of "
            f"no falsifier, {not_killed} not killed in the evidence"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "checkers": [c.to_json() for c in self.checkers],
            "faults": [f.to_json() for f in self.faults],
            "problems": self.problems,
            "summary": self.summary(),
        }


def names_read(f: FalsificationTest) -> set[str]:
    """Observation names the falsifier's predicates read (params and parametrized names excluded)."""
    read: set[str] = set()
    for text in (f.expect, f.aggregate):
        if not text:
            continue
        try:
            read |= set(parse(text).names)
        except ExprError:
            continue  # lint reports it; an unparsable predicate reads nothing
    return read - set(f.params) - set(parametrized_names(f))


def _registry_modules(packages: Iterable[str]) -> list[str]:
    """Modules of ``packages`` whose source constructs a FaultRegistry (found by reading, not importing)."""
    found = []
    for name in packages:
        spec = importlib.util.find_spec(name)  # imports a dotted name's parents only, never the package
        if spec is None:
            continue
        roots = list(spec.submodule_search_locations or [])
        if not roots and spec.origin and _constructs_registry(Path(spec.origin)):
            found.append(name)
        for root in map(Path, roots):
            for file in sorted(root.rglob("*.py")):
                parts = file.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if _constructs_registry(file):
                    found.append(".".join((name, *parts)))
    return found


def _constructs_registry(file: Path) -> bool:
    return "FaultRegistry(" in file.read_text(errors="replace")


def compute(project: Project, views: Sequence[ContractView]) -> Inventory:
    config = project.config
    ensure_importable(config.root)
    problems: list[str] = []
    try:
        specs: dict[str, CheckerSpec] = discover(config.checker_packages)
    except CheckerBindingError as exc:
        specs, problems = {}, [str(exc)]
    checkers = {ref: CheckerInventory(ref, list(spec.observes)) for ref, spec in sorted(specs.items())}
    faults: dict[str, FaultInventory] = {}

    def registry(module: str) -> None:
        try:
            mod = importlib.import_module(module)
        except Exception as exc:
            problems.append(f"fault module {module!r} failed to import: {exc}")
            return
        reg = getattr(mod, REGISTRY_ATTR, None)
        if reg is None or not hasattr(reg, "names"):
            return
        for name in reg.names():
            ref = f"{module}:{name}"
            describe = getattr(reg, "describe", None)
            faults.setdefault(ref, FaultInventory(ref, describe(name) if describe else ""))

    for module in _registry_modules(config.mutant_packages):
        registry(module)
    killed = {(v.id, s.id): bool(s.mutant_killed) for v in views for s in v.falsifiers}
    for view in views:
        contract = project.contract(view.path).loaded
        if contract is None or contract.contract is None:
            continue
        for f in contract.contract.falsification_tests:
            label = f"{view.id}:{f.id}"
            if f.check in checkers:
                checkers[f.check].falsifiers.append(label)
                checkers[f.check].read |= names_read(f)
            if f.mutant and f.mutant not in faults:  # a registry outside the packages, or a broken name
                try:
                    resolve_mutant(f.mutant, config.mutant_packages)
                except LookupError as exc:
                    problems.append(f"{label}: {exc}")
                else:
                    registry(f.mutant.partition(":")[0])
            if f.mutant and f.mutant in faults:
                faults[f.mutant].mutant_of.append(label)
                if killed.get((view.id, f.id)):
                    faults[f.mutant].killed_by.append(label)
    return Inventory(list(checkers.values()), sorted(faults.values(), key=lambda x: x.ref), problems)


def render(inventory: Inventory, *, all_rows: bool = False) -> None:
    """Two rich tables on stdout: checkers with unread observations, faults not killed (or every
    row with ``all_rows``), then the summary line."""
    # rich loads only when a table is printed
    from rich.console import Console
    from rich.table import Table

    tty = sys.stdout.isatty()
    console = Console(width=None if tty else 200, highlight=False, no_color=not tty)
    checkers = Table(title="observations no expect reads")
    for header in ("checker", "falsifiers", "observes", "unread"):
        checkers.add_column(header, overflow="fold")
    for c in inventory.checkers:
        if all_rows or c.unread or not c.falsifiers:
            checkers.add_row(
                c.ref, ", ".join(c.falsifiers) or "(none)", str(len(c.observes)), ", ".join(c.unread) or "-"
            )
    faults = Table(title="registered faults no falsifier kills")
    for header in ("fault", "state", "mutant of", "description"):
        faults.add_column(header, overflow="fold")
    for f in inventory.faults:
        if all_rows or f.state != "killed":
            faults.add_row(f.ref, f.state, ", ".join(f.mutant_of) or "-", f.description)
    console.print(checkers)
    console.print(faults)
    console.print(inventory.summary(), markup=False, highlight=False)
