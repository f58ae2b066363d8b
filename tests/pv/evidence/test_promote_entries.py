"""The changelog entry promote writes: a promotion from ACTIVE_ALGORITHM_LEVEL is a promotion, and
its values are written as YAML reads them back, readable (non-ASCII kept) and quoted unless a semver
version."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml

from pv.model import Status
from pv.promote import Decision, _quote, _scalar, changelog_entry


def _decision(current: Status, target: Status, reason: str) -> Decision:
    return Decision(Path("contracts/x-v1.yaml"), "x-v1", "1.2.0", current, target, reason)


def test_a_step_up_from_algorithm_level_is_a_promotion() -> None:
    entry = changelog_entry(
        _decision(Status.ACTIVE_ALGORITHM_LEVEL, Status.ACTIVE, "promoted"), dt.date(2026, 1, 2), None
    )
    assert entry["change"] == "status ACTIVE_ALGORITHM_LEVEL -> ACTIVE from verified evidence"
    down = changelog_entry(
        _decision(Status.ACTIVE, Status.ACTIVE_ALGORITHM_LEVEL, "demoted: the GPU claim is gone"),
        dt.date(2026, 1, 2),
        None,
    )
    assert down["change"] == "status ACTIVE -> ACTIVE_ALGORITHM_LEVEL: the GPU claim is gone"


def test_values_are_written_as_yaml_reads_them_back() -> None:
    assert _quote("loss ≤ 0.7·ln(V) → held") == '"loss ≤ 0.7·ln(V) → held"'  # readable, not \\u-escaped
    assert yaml.safe_load(_quote('say "no": 1.0')) == 'say "no": 1.0'
    assert _scalar("version", "1.2.0") == "1.2.0"
    assert _scalar("change", "1.2.0") == '"1.2.0"'  # a semver-looking text that is not a version stays a string
    assert _scalar("version", "v1") == '"v1"'
