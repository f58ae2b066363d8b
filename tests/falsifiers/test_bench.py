"""The bench checker's timing loop and its guards, on a trivial brick."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch

from engine.config import preset
from engine.model import DecoderLM, build_model
from falsifiers.bench import MAX_INNER, brick_cv, time_repetitions


def _factory(seed: int = 0, **_: Any) -> DecoderLM:
    torch.manual_seed(seed)
    return build_model(preset("tiny")).eval()


def test_time_repetitions_counts_calls() -> None:
    calls = 0

    def run() -> None:
        nonlocal calls
        calls += 1

    wall, cpu, inner = time_repetitions(run, repetitions=4, warmup=2)
    assert len(wall) == len(cpu) == 4
    assert 1 <= inner <= MAX_INNER
    assert all(w > 0 for w in wall)
    # calibration calls plus (2 warm-up + 4 timed) repetitions of `inner` calls each
    assert calls >= 1 + 6 * inner


def test_brick_cv_reports_and_restores_global_state() -> None:
    threads = torch.get_num_threads()
    obs = brick_cv(_factory, brick="loss", repetitions=3, warmup=1)
    assert obs["repetitions_timed"] == 3
    assert obs["cv"] >= 0 and obs["cpu_cv"] >= 0
    assert 0 < obs["min_s"] <= obs["median_s"]
    assert torch.get_num_threads() == threads
    assert gc.isenabled()


@pytest.mark.parametrize(("brick", "repetitions"), [("warp_drive", 5), ("loss", 1)])
def test_brick_cv_rejects_bad_params(brick: str, repetitions: int) -> None:
    with pytest.raises(ValueError):
        brick_cv(_factory, brick=brick, repetitions=repetitions, warmup=0)
