"""A property falsifier's Hypothesis record (the settings it ran under, the counterexample it found)
reaches its bundle entry, in the JSON form evidence writes: a NaN in a counterexample stays "nan"."""

from __future__ import annotations

import math

from pv.evidence.writer import _entry
from pv.results import FalsifierResult, Verdict


def test_the_hypothesis_record_reaches_the_entry() -> None:
    record = {"max_examples": 50, "counterexample": {"x": math.nan, "shape": (2, 3)}, "examples_replayed": 1}
    result = FalsifierResult("c-v1", "F1", Verdict.FALSIFIED, True, hypothesis=record)
    entry = _entry("F1", {}, result, False)
    assert entry.hypothesis == {
        "max_examples": 50,
        "counterexample": {"x": "nan", "shape": [2, 3]},
        "examples_replayed": 1,
    }
    plain = FalsifierResult("c-v1", "F1", Verdict.SURVIVED, True)
    assert _entry("F1", {}, plain, False).hypothesis is None
