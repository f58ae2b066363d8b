"""The reviewed equivalent mutants, held to the mutants they were reviewed as.

``mutation/equivalent.txt`` names each reviewed mutant by mutmut's name, and mutmut numbers
a function's mutants in order: an edit to the function renumbers them, and the entry then names
another mutant (one a falsifier may kill, or one that is no mutant at all).  So each entry's change,
the lines ``mutmut show`` prints as removed and added, is kept in
``mutation/equivalent-diffs.json`` when it is reviewed (``python scripts/mutation/run.py
--lock-equivalents``), and an entry whose mutant now changes something else, or no longer exists,
is stale: it is left out of the figures and listed for a new review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from cache import read_lists, write_lists

from pv.mutation import read_equivalent

Change = list[str]


def current_changes(names: Iterable[str]) -> dict[str, Change | None]:
    """Each mutant's removed and added lines as mutmut shows them (run from the repository root,
    with ``mutants/`` generated); None for a name mutmut has no mutant for."""
    # optional: mutmut exists only with the [mutation] extra
    from mutmut.__main__ import setup_source_paths
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    setup_source_paths()
    out: dict[str, Change | None] = {}
    for name in names:
        try:
            diff = get_diff_for_mutant(name)
        except FileNotFoundError:
            out[name] = None
            continue
        out[name] = [
            line.strip() for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
    return out


def read_lock(path: Path) -> dict[str, Change]:
    return read_lists(path)


def write_lock(path: Path, changes: Mapping[str, Change]) -> None:
    write_lists(path, changes)


def stale(reviewed: Mapping[str, str], lock: Mapping[str, Change], now: Mapping[str, Change | None]) -> dict[str, str]:
    """The entries of ``reviewed`` that no longer hold, each with why."""
    out: dict[str, str] = {}
    for name in reviewed:
        if name not in lock:
            out[name] = "never locked: review it, then run --lock-equivalents"
        elif now.get(name) is None:
            out[name] = "mutmut has no such mutant any more"
        elif now[name] != lock[name]:
            out[name] = "the mutant changes other code than was reviewed: " + " / ".join(now[name] or [])
    return out


Changes = Callable[[Iterable[str]], dict[str, Change | None]]


def held(reviewed_path: Path, lock_path: Path, changes: Changes = current_changes) -> dict[str, str]:
    """The reviewed equivalents that still name the mutant reviewed; the stale ones are listed and left out."""
    reviewed = read_equivalent(reviewed_path)
    bad = stale(reviewed, read_lock(lock_path), changes(reviewed))
    if bad:
        print(f"\n{len(bad)} reviewed equivalents are stale and left out (review them again):")
        for name, why in sorted(bad.items()):
            print(f"  {name}: {why}")
    return {n: why for n, why in reviewed.items() if n not in bad}


def lock(reviewed_path: Path, lock_path: Path, changes: Changes = current_changes) -> int:
    """Record the change of every reviewed equivalent that has none recorded (a new review)."""
    reviewed = read_equivalent(reviewed_path)
    locked = {n: c for n, c in read_lock(lock_path).items() if n in reviewed}
    now = changes(n for n in reviewed if n not in locked)
    missing = sorted(n for n, c in now.items() if c is None)
    locked |= {n: c for n, c in now.items() if c is not None}
    write_lock(lock_path, locked)
    print(f"locked {len(now) - len(missing)} newly reviewed equivalents; {len(locked)} in all")
    for name in missing:
        print(f"  no such mutant: {name}")
    return 1 if missing else 0
