"""Benchmark stability: the coefficient of variation of each engine brick over its repetitions.

The bricks and their timing are the engine's own (:mod:`engine.bricks`, what ``python -m engine
bench`` reports); this checker only runs one with the contract's warm-up and repetitions and
hands back the figures.
"""

from __future__ import annotations

from typing import Any

from engine.bricks import BrickSettings, run_brick
from pv.checkers import checker


@checker(
    observes=["cv", "min_s", "median_s", "mean_s", "repetitions_timed"],
    ids=[f"FALSIFY-BENCH-00{i}" for i in range(1, 8)],
)
def brick_cv(brick: str, repetitions: int, warmup: int, seed: int = 0) -> dict[str, Any]:
    """Run one brick on the tiny preset (CPU) and report the dispersion of its wall times."""
    result = run_brick(brick, BrickSettings(preset="tiny", warmup=warmup, reps=repetitions, device="cpu", seed=seed))
    return {
        "cv": result.cv,
        "min_s": result.min_s,
        "median_s": result.median_s,
        "mean_s": result.mean_s,
        "repetitions_timed": result.reps,
    }
