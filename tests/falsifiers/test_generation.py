"""The sampling reference the generation falsifiers compare the engine with."""

from __future__ import annotations

import math

import pytest

from engine.faults import FAULTS
from falsifiers.generation.generation import reference_distribution, sampling_distribution

LOGITS = [0.0, math.log(2), math.log(4)]  # probabilities 1/7, 2/7, 4/7


def test_reference_is_softmax_then_top_k_then_nucleus() -> None:
    assert reference_distribution(LOGITS, 1.0, None, None) == pytest.approx([1 / 7, 2 / 7, 4 / 7])
    assert reference_distribution(LOGITS, 1.0, 2, None) == pytest.approx([0, 1 / 3, 2 / 3])
    assert reference_distribution(LOGITS, 1.0, None, 0.5) == pytest.approx([0, 0, 1])  # 4/7 reaches 0.5
    assert reference_distribution(LOGITS, 1.0, None, 0.6) == pytest.approx([0, 1 / 3, 2 / 3])
    # temperature first: at T = 2 the top token has 2/(1 + sqrt2 + 2) < 0.5, so the nucleus grows
    t2 = reference_distribution(LOGITS, 2.0, None, 0.5)
    assert sum(1 for p in t2 if p > 0) == 2


def test_the_checker_separates_the_engine_from_its_sampling_faults() -> None:
    kw = {"temperature": 1.3, "top_k": 6, "samples": 50_000}
    ok = sampling_distribution(**kw)
    assert ok["outside_support"] == 0 and ok["tv_distance"] < 0.02
    with FAULTS.enabled("top_k_off_by_one"):
        bad = sampling_distribution(**kw)
    assert bad["outside_support"] > 0 and bad["support_sampled"] == 7
