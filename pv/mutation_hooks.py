"""pytest side of mutation testing: log which falsifiers failed under the mutant this run tests.

Loaded by the pv plugin.  ``--pv-mutation-log PATH`` (ini ``pv_mutation_log``) turns it on; the
mutant's name comes from ``--pv-mutant-id`` or, under mutmut, from ``MUTANT_UNDER_TEST``.  A run
with no mutant name (mutmut's clean and stats runs) writes nothing.  ``pv mutation report`` reads
the log; see :mod:`pv.mutation`.

Under a mutant, the falsifiers run fastest first when mutmut's stats (``mutmut-stats.json`` in the
directory mutmut runs from) give their durations: mutmut stops at the first failure, so a mutant
that a one-second falsifier kills no longer waits for the half-minute ones listed before it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pv.mutation import append_run, mutant_id_from_env
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


def _durations(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data["duration_by_test"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no stats, or not mutmut's: keep pytest's order


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not settings_of(config).mutation_log or not mutant_id_from_env():
        return
    durations = _durations(Path.cwd() / MUTMUT_STATS)
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, math.inf))  # stable: ties keep their order


def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    target = settings_of(config).mutation_log
    mutant = config.getoption("pv_mutant_id") or mutant_id_from_env()
    if not target or not mutant:
        return
    verdicts = {
        f"{r.contract_id}::{r.falsify_id}": r.verdict.value for r in run.results if r.verdict != Verdict.NOT_RUN
    }
    if verdicts:
        append_run(target, mutant, verdicts)
