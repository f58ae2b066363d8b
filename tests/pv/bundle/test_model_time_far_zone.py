"""A bundle's time written without a zone is UTC on every machine: one whose own zone is far
from UTC reads it as the same moment, not as its local time."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import pytest

from pv.bundle.model import parse_time


@pytest.fixture
def far_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "KTM-5:45")  # a POSIX zone five and three quarter hours east of UTC
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("far_zone")
def test_a_time_without_a_zone_is_utc_on_a_machine_in_another_zone() -> None:
    assert time.timezone == -(5 * 3600 + 45 * 60)  # the machine's zone is the far one
    when = parse_time("2026-12-03T12:00:00")
    assert when == dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC) and when is not None and when.tzinfo is dt.UTC


@pytest.mark.usefixtures("far_zone")
def test_a_time_with_an_offset_is_converted_not_relabelled_in_another_zone() -> None:
    when = parse_time("2026-12-03T14:00:00+02:00")
    assert when == dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC) and when is not None and when.tzinfo is dt.UTC
