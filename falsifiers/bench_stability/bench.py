"""Benchmark stability: the engine bricks' coefficients of variation, and the timer behind them.

The bricks and their timing are the engine's own (:mod:`engine.bricks`, what ``python -m engine
bench`` reports).  :func:`brick_cv` runs one brick with the contract's warm-up, repetitions and
repetition target and hands back its figures.  :func:`timer_accounting` checks that those figures
mean what they say: it drives the same timer (:func:`engine.bricks.time_call` and the summary
every brick goes through) with a callable of known cost, on a scripted clock where every call's
cost is known exactly, and compares what the timer reports with what really happened.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import torch

from engine.bricks import BrickSettings, run_brick, summarize_timing, time_call
from falsifiers.shared.clocks import _ScriptedClock
from pv.checkers import checker
from pv.noise import dispersion, worst


@checker(
    observes=[
        "cv",
        "worst_cv",
        "wall_cv",
        "reference_cv",
        "min_s",
        "median_s",
        "mean_s",
        "repetitions_timed",
        "calls_per_rep",
        "shortest_rep_s",
    ],
    ids=[f"FALSIFY-BENCH-00{i}" for i in range(1, 8)],
)
def brick_cv(
    brick: str, repetitions: int, warmup: int, min_rep_s: float = 0.02, threads: int = 0, seed: int = 0
) -> dict[str, Any]:
    """Run one brick on the tiny preset (CPU) and report the dispersion of its per-call CPU times.

    ``cv`` is the CV of the process CPU time per call over the timed repetitions, measured with
    noise (:func:`pv.noise.dispersion`): a fixed reference workload is timed after every
    repetition, and its CPU-time CV (``reference_cv``, the machine's noise floor at those moments)
    sets the interval the verdict is judged over.  CPU time, not wall time: a repetition that
    waited for a core says nothing about the brick (``wall_cv`` is kept as a diagnostic).
    ``worst_cv`` is the largest ``cv`` over every series the brick times (the batch brick times one
    per batch size; for the others it equals ``cv``).  ``threads`` > 0 runs the brick with that
    many torch intra-op threads (0: torch's default).
    """
    settings = BrickSettings(
        preset="tiny",
        warmup=warmup,
        reps=repetitions,
        min_rep_s=min_rep_s,
        threads=threads,
        device="cpu",
        seed=seed,
        reference=True,
    )
    result = run_brick(brick, settings)
    cv = dispersion(result.extra["cpu_per_call_s"], result.extra["reference_cpu_per_call_s"])
    by_batch = result.extra.get("by_batch") or {}
    series = {f"batch {b}": dispersion(v["cpu_per_call_s"], v["reference_cpu_per_call_s"]) for b, v in by_batch.items()}
    return {
        "cv": cv,
        "worst_cv": worst(series) if series else cv,
        "wall_cv": result.cv,
        "reference_cv": result.extra["reference_cpu_cv"],
        "min_s": result.min_s,
        "median_s": result.median_s,
        "mean_s": result.mean_s,
        "repetitions_timed": result.reps,
        "calls_per_rep": result.calls_per_rep,
        "shortest_rep_s": result.extra["shortest_rep_s"],
    }


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@checker(
    observes=[
        "calls_made",
        "untimed_calls",
        "repetitions_timed",
        "calls_per_rep",
        "shortest_rep_s",
        "longest_rep_s",
        "per_call_max_rel_error",
        "cv_reported",
        "cv_expected",
        "cv_abs_error",
        "real_calls_per_rep",
        "real_min_per_call_over_cost",
    ],
    ids=["FALSIFY-BENCH-008"],
)
def timer_accounting(
    repetitions: int,
    warmup: int,
    min_rep_s: float,
    call_s: float,
    cold_s: float,
    jitter: float,
    real_call_s: float,
    seed: int = 0,
) -> dict[str, Any]:
    """Drive the brick timer with calls of known cost and compare its report with the truth.

    Scripted part: call ``i`` advances the injected clock by ``cold_s`` for the first ``warmup``
    calls and by ``call_s * (1 + jitter * u_i)`` after (``u_i`` uniform in [-1, 1] from ``seed``),
    and the clock value at every call boundary is recorded.  The timer's documented protocol puts
    its timed repetitions last, ``calls_per_rep`` consecutive calls each, so the true repetition
    times are clock differences over the last ``repetitions * calls_per_rep`` calls.  Observed:
    how many calls ran and how many of them came before the timed ones (``untimed_calls``, which
    must cover the warm-up), the repetitions reported, the true shortest and longest repetition,
    the largest relative gap between a reported per-call time and the true repetition time / n
    (over the repetitions both have), and the reported CV next to stdev / mean of the true per-call
    times.  Real part: the default wall clock with a callable that busy-waits ``real_call_s``; no
    per-call figure may come out below that cost (``real_min_per_call_over_cost`` >= 1).
    """
    cpu = torch.device("cpu")
    rng = random.Random(seed)
    clock = _ScriptedClock()
    bounds = [0.0]  # clock value at each call boundary: bounds[i] before call i, bounds[i+1] after

    def call() -> None:
        i = len(bounds) - 1
        cost = cold_s if i < warmup else call_s * (1 + jitter * rng.uniform(-1.0, 1.0))
        clock.now += cost
        bounds.append(clock.now)

    timing = time_call(call, warmup=warmup, reps=repetitions, device=cpu, min_rep_s=min_rep_s, clock=clock)
    result = summarize_timing("timer-probe", timing, warmup)
    n = result.calls_per_rep
    calls = len(bounds) - 1
    first_timed = calls - repetitions * n
    true_rep = [bounds[first_timed + (k + 1) * n] - bounds[first_timed + k * n] for k in range(repetitions)]
    true_per_call = [t / n for t in true_rep]
    errors = [abs(r - t) / t for r, t in zip(timing.per_call_s, true_per_call, strict=False)]
    cv_expected = statistics.stdev(true_per_call) / statistics.fmean(true_per_call)

    real = time_call(lambda: _busy_wait(real_call_s), warmup=warmup, reps=repetitions, device=cpu, min_rep_s=min_rep_s)
    return {
        "calls_made": calls,
        "untimed_calls": first_timed,
        "repetitions_timed": result.reps,
        "calls_per_rep": n,
        "shortest_rep_s": min(true_rep),
        "longest_rep_s": max(true_rep),
        "per_call_max_rel_error": max(errors),
        "cv_reported": result.cv,
        "cv_expected": cv_expected,
        "cv_abs_error": abs(result.cv - cv_expected),
        "real_calls_per_rep": real.calls_per_rep,
        "real_min_per_call_over_cost": min(real.per_call_s) / real_call_s,
    }
