"""Where a falsifier ran (the device its result names) is what its bundle entry says."""

from __future__ import annotations

from pv.evidence.writer import _entry
from pv.results import FalsifierResult, Verdict


def test_the_device_a_falsifier_ran_on_reaches_its_entry() -> None:
    result = FalsifierResult("c-v1", "F1", Verdict.SURVIVED, True, device="cuda:1")
    assert _entry("F1", {}, result, False).device == "cuda:1"
