"""pytest side of mutation testing: log which falsifiers failed under the mutant this run tests.

Loaded by the pv plugin.  ``--pv-mutation-log PATH`` (ini ``pv_mutation_log``) turns it on; the
mutant's name comes from ``--pv-mutant-id`` or, under mutmut, from ``MUTANT_UNDER_TEST``.  A run
with no mutant name (mutmut's clean and stats runs) writes nothing.  ``pv mutation report`` reads
the log; see :mod:`pv.mutation`.

Under a mutant, the falsifiers run fastest first when mutmut's stats (``mutmut-stats.json`` in the
directory mutmut runs from) give their durations: mutmut stops at the first failure, so a mutant
that a one-second falsifier kills no longer waits for the half-minute ones listed before it.  The
falsifiers that killed the same mutant in an earlier run, named in ``pv-mutation-hints.json`` beside
the stats (``{mutant: [node id, ...]}``, written by the driver of a resumed run), go before all of
them: a kill re-opened by an edit elsewhere is most likely re-confirmed by its old killer.  The
falsifiers named for the mutant in ``pv-mutation-skips.json`` (same form) are deselected: they let
it live before and nothing that decides them has changed since, so a survivor re-opened by one new
falsifier runs that one alone; a skip list that would leave nothing to run is ignored.

mutmut learns which tests reach which function from the test process alone.  A falsifier that runs
the system in a child process reaches functions mutmut never sees, and their mutants would be
reported as reached by no test.  When ``PV_MUTMUT_CHILD_HITS`` names a folder, the functions that
child processes recorded there (one ``*.hits`` file of names per process, written at its exit; see
``scripts/mutation/mutmut_site/sitecustomize.py`` for a child side) are added to the running test's during
mutmut's stats run.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import MutableSet
from pathlib import Path

import pytest

from pv.mutation import CHILD_HITS_ENV, ENV_MUTANT, append_run, mutant_id_from_env
from pv.pytest_settings import settings_of
from pv.results import RunRecord, Verdict


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pv")
    group.addoption(
        "--pv-mutation-log",
        default=None,
        metavar="PATH",
        help="append the verdict of every falsifier that ran, under the mutant being tested, to PATH "
        "(JSON lines; `pv mutation report` reads it)",
    )
    group.addoption(
        "--pv-mutant-id",
        default=None,
        metavar="NAME",
        help="the mutant this run tests (default: MUTANT_UNDER_TEST, as mutmut sets it)",
    )


MUTMUT_STATS = "mutmut-stats.json"
KILLER_HINTS = "pv-mutation-hints.json"
SURVIVOR_SKIPS = "pv-mutation-skips.json"


def merge_child_hits(folder: Path, into: MutableSet[str]) -> int:
    """Add the function names child processes left in ``folder`` to ``into``; the files are consumed."""
    added = 0
    for path in sorted(folder.glob("*.hits")):
        names = {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
        added += len(names - set(into))
        into |= names
        path.unlink()
    return added


def _stats_sink() -> MutableSet[str] | None:
    """mutmut's set of the functions the running test has called, during its stats run only."""
    if os.environ.get(ENV_MUTANT) != "stats" or not os.environ.get(CHILD_HITS_ENV):
        return None
    try:
        # optional: mutmut exists only in a mutation run (the [mutation] extra)
        from mutmut.state import state
    except ImportError:
        return None
    stats: MutableSet[str] = state()._stats
    return stats


def pytest_sessionstart(session: pytest.Session) -> None:
    if _stats_sink() is not None:  # a child killed before this run's tests must not count for them
        for stale in Path(os.environ[CHILD_HITS_ENV]).glob("*.hits"):
            stale.unlink()


@pytest.hookimpl(tryfirst=True)  # before mutmut's own teardown hook files the test's functions
def pytest_runtest_teardown(item: pytest.Item) -> None:
    sink = _stats_sink()
    if sink is not None:
        merge_child_hits(Path(os.environ[CHILD_HITS_ENV]), sink)


def _durations(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data["duration_by_test"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no stats, or not mutmut's: keep pytest's order


def _named_for(path: Path, mutant: str) -> set[str]:
    """The node ids ``path`` (``{mutant: [node id, ...]}``) names for ``mutant``; none when the
    file is absent or not of that form."""
    try:
        named = json.loads(path.read_text(encoding="utf-8")).get(mutant, [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {str(n) for n in named} if isinstance(named, list) else set()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mutant = mutant_id_from_env()
    if not settings_of(config).mutation_log or not mutant:
        return
    skips = _named_for(Path.cwd() / SURVIVOR_SKIPS, mutant)
    if skips and any(item.nodeid not in skips for item in items):
        skipped = [item for item in items if item.nodeid in skips]
        items[:] = [item for item in items if item.nodeid not in skips]
        config.hook.pytest_deselected(items=skipped)
    durations = _durations(Path.cwd() / MUTMUT_STATS)
    killers = _named_for(Path.cwd() / KILLER_HINTS, mutant)
    if durations or killers:
        # stable: ties keep their order
        items.sort(key=lambda item: (item.nodeid not in killers, durations.get(item.nodeid, math.inf)))


def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    target = settings_of(config).mutation_log
    mutant = config.getoption("pv_mutant_id") or mutant_id_from_env()
    if not target or not mutant:
        return
    verdicts = {
        f"{r.contract_id}::{r.falsify_id}": r.verdict.value for r in run.results if r.verdict != Verdict.NOT_RUN
    }
    reasons = {f"{r.contract_id}::{r.falsify_id}": r.message for r in run.results if r.message}
    if verdicts:
        append_run(target, mutant, verdicts, reasons)
