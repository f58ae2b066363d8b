"""The times evidence records are UTC whatever the machine's time zone: a run whose start time
cannot be read is stamped with the current UTC time, and each ledger line with the UTC time it was
appended, never the local clock written as if it were UTC."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pv.bundle.model import RUN_ID_TIME_FORMAT
from pv.evidence import ledger as lg
from pv.evidence.writer import make_run_id


@pytest.fixture
def far_from_utc() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Etc/GMT-9"  # POSIX sign: nine hours ahead of UTC
    time.tzset()
    try:
        assert time.localtime().tm_gmtoff == 9 * 3600  # the zone took
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.usefixtures("far_from_utc")
def test_an_unreadable_start_time_is_stamped_in_utc() -> None:
    before = dt.datetime.now(dt.UTC)
    run_id = make_run_id("not a time", "salt")
    after = dt.datetime.now(dt.UTC)
    stamped = dt.datetime.strptime(run_id.split("-")[0], RUN_ID_TIME_FORMAT).replace(tzinfo=dt.UTC)
    assert before - dt.timedelta(seconds=1) <= stamped <= after


@pytest.mark.usefixtures("far_from_utc")
def test_a_ledger_line_is_stamped_in_utc(tmp_path: Path) -> None:
    before = dt.datetime.now(dt.UTC)
    with lg.locked(tmp_path) as led:
        lg.append(led, "bundle", "r1", "d-r1")
    after = dt.datetime.now(dt.UTC)
    [entry] = lg.read(tmp_path).entries
    stamped = dt.datetime.strptime(entry.at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    assert before <= stamped <= after
