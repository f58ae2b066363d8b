"""The times a bundle is ordered by, and the reason a run with faults switched on is no evidence."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from pv.evidence.status import _not_evidence, bundle_time

UTC = dt.UTC


def test_a_bundle_is_ordered_by_its_own_times() -> None:
    b = SimpleNamespace(started_at="2026-03-01T10:00:00+00:00", finished_at="2026-03-01T10:05:00+00:00", run_id="r")
    assert bundle_time(b) == (  # type: ignore[arg-type]
        dt.datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
        dt.datetime(2026, 3, 1, 10, 5, tzinfo=UTC),
        "r",
    )


def test_a_bundle_without_readable_times_sorts_first_and_ends_when_it_started() -> None:
    unfinished = SimpleNamespace(started_at="2026-03-01T10:00:00+00:00", finished_at="", run_id="r")
    start = dt.datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    assert bundle_time(unfinished) == (start, start, "r")  # type: ignore[arg-type]
    timeless = SimpleNamespace(started_at="someday", finished_at="never", run_id="r")
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert bundle_time(timeless) == (epoch, epoch, "r")  # type: ignore[arg-type]


def test_every_fault_switched_on_for_the_run_is_named() -> None:
    b = SimpleNamespace(settings=SimpleNamespace(faults_env=["engine.faults:a", "engine.faults:b"]))
    assert _not_evidence(b) == (  # type: ignore[arg-type]
        "faults switched on for the whole run by PV_FAULTS: engine.faults:a, engine.faults:b"
    )
