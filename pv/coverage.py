"""``pv coverage``: how much of each contract's claim is tested, and how much of that is backed.

Per contract and in total: obligations covered by at least one falsifier (``obligation:``
linking to it), falsifiers with ``survived`` evidence in the newest verified, current bundle,
falsifiers that declare a mutant, and mutants that evidence shows killed.  Read from
:mod:`pv.statusview`, so the numbers agree with ``pv status``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pv.statusview import ContractView


@dataclass
class Coverage:
    id: str
    path: str
    obligations: int = 0
    covered: int = 0
    falsifiers: int = 0
    survived: int = 0
    with_mutant: int = 0
    mutant_killed: int = 0
    uncovered: list[str] = field(default_factory=list)
    loaded: bool = True

    def add(self, other: Coverage) -> None:
        for name in ("obligations", "covered", "falsifiers", "survived", "with_mutant", "mutant_killed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "loaded": self.loaded,
            "obligations": {
                "total": self.obligations,
                "covered": self.covered,
                "uncovered": self.uncovered,
                "percent": percent(self.covered, self.obligations),
            },
            "falsifiers": {
                "total": self.falsifiers,
                "survived": self.survived,
                "survived_percent": percent(self.survived, self.falsifiers),
                "with_mutant": self.with_mutant,
                "with_mutant_percent": percent(self.with_mutant, self.falsifiers),
                "mutant_killed": self.mutant_killed,
            },
        }


def percent(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in percent, one decimal; None when there is nothing to cover."""
    return round(100.0 * part / whole, 1) if whole else None


def of_view(view: ContractView) -> Coverage:
    covered = view.covered_obligations
    return Coverage(
        id=view.id,
        path=view.rel,
        obligations=len(view.obligations),
        covered=len(covered),
        falsifiers=len(view.falsifiers),
        survived=view.count("survived"),
        with_mutant=sum(1 for f in view.falsifiers if f.mutant),
        mutant_killed=sum(1 for f in view.falsifiers if f.mutant_killed),
        uncovered=[o for o in view.obligations if o not in covered],
        loaded=view.loaded,
    )


def compute(views: Sequence[ContractView]) -> tuple[list[Coverage], Coverage]:
    rows = [of_view(v) for v in views]
    total = Coverage(id="total", path="")
    for row in rows:
        total.add(row)
        total.uncovered.extend(f"{row.id}:{o}" for o in row.uncovered)
    return rows, total


def to_json(rows: Sequence[Coverage], total: Coverage) -> dict[str, Any]:
    return {"contracts": [r.to_json() for r in rows], "total": total.to_json()}


def _cell(part: int, whole: int) -> str:
    p = percent(part, whole)
    return f"{part}/{whole}" + (f" ({p:g}%)" if p is not None else "")


def render_table(rows: Sequence[Coverage], total: Coverage) -> None:
    """The rich table on stdout; wide enough not to wrap when stdout is not a terminal."""
    # rich loads only when a table is printed
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pv coverage", show_footer=True)
    headers = ("contract", "obligations covered", "falsifiers survived", "falsifiers with a mutant", "mutants killed")
    footers = (
        "total",
        _cell(total.covered, total.obligations),
        _cell(total.survived, total.falsifiers),
        _cell(total.with_mutant, total.falsifiers),
        _cell(total.mutant_killed, total.with_mutant),
    )
    for i, (header, footer) in enumerate(zip(headers, footers, strict=True)):
        table.add_column(header, footer=footer, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        if not r.loaded:
            table.add_row(r.id, "INVALID", "-", "-", "-", style="red")
            continue
        table.add_row(
            r.id,
            _cell(r.covered, r.obligations),
            _cell(r.survived, r.falsifiers),
            _cell(r.with_mutant, r.falsifiers),
            _cell(r.mutant_killed, r.with_mutant),
        )
    tty = sys.stdout.isatty()
    console = Console(width=None if tty else 200, highlight=False, no_color=not tty)
    console.print(table)
    if total.uncovered:
        console.print("uncovered obligations: " + ", ".join(total.uncovered), highlight=False, soft_wrap=True)
