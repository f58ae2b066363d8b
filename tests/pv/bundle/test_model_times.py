"""A bundle's times are read as aware UTC datetimes whatever zone they were written in: ``Z``, an
offset (converted, not relabelled), or none (read as UTC); text that is not a time is None."""

from __future__ import annotations

import datetime as dt

import pytest

from pv.bundle.model import parse_time

NOON_UTC = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "text",
    ["2026-12-03T12:00:00Z", "2026-12-03T12:00:00+00:00", "2026-12-03T14:00:00+02:00", "2026-12-03T07:30:00-04:30"],
)
def test_a_time_with_a_zone_is_the_same_moment_in_utc(text: str) -> None:
    when = parse_time(text)
    assert when == NOON_UTC and when is not None and when.tzinfo is dt.UTC


def test_a_time_without_a_zone_is_read_as_utc() -> None:
    when = parse_time("2026-12-03T12:00:00")
    assert when == NOON_UTC and when is not None and when.tzinfo is dt.UTC


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-03T12:00:00Z", "2026-12-03T12:00:00ZZ"])
def test_text_that_is_not_a_time_is_none(text: str) -> None:
    assert parse_time(text) is None
