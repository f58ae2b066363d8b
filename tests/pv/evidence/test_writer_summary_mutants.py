"""A bundle's summary counts a falsifier's mutant as killed only when the mutant run falsified it,
and as survived only when it ran and did not: a mutant run that errored or was skipped is neither,
and a falsifier whose mutant never ran counts in neither."""

from __future__ import annotations

from pv.bundle.model import FalsifierEntry, MutantEntry
from pv.evidence.writer import _summary


def _with_mutant(verdict: str | None, killed: bool | None) -> FalsifierEntry:
    mutant = MutantEntry(declared="m:f", verdict=verdict, killed=killed)  # type: ignore[arg-type]
    return FalsifierEntry(id="F", ship_blocking=True, selected=True, verdict="survived", mutant=mutant)


def test_killed_and_survived_mutants_are_counted_apart() -> None:
    entries = [
        *(_with_mutant("falsified", True) for _ in range(3)),
        _with_mutant("survived", False),
        _with_mutant("error", None),  # the mutant run itself failed: undecided
        _with_mutant(None, None),  # mutants not run
    ]
    summary = _summary(entries)
    assert (summary.mutants_killed, summary.mutants_survived) == (3, 1)
