"""A brick's result from its timing: every field, by the formulas written out here.

``engine.bricks.summarize_timing`` turns a ``Timing`` into the ``BrickResult`` the bench prints
and writes: the repetitions' count, min, median and mean per-call time (Python's ``statistics``),
the CV (sample standard deviation over the mean), the rate (items per call over the median), the
calls per repetition, the shortest repetition, the CPU-time CV, and, when the reference workload
ran beside the brick, the raw series and CVs a noise-aware judge reads.  Three timings written out
here (with and without a reference, one without CPU times) are summarized and compared field for
field.  ``available_memory_gib`` on the CPU is the operating system's available memory in GiB
(psutil, read just before and after: memory moves between two readings).
"""

from __future__ import annotations

import statistics
from typing import Any

import psutil
import torch

from engine.bricks import Timing, available_memory_gib, summarize_timing
from pv.checkers import checker

GIB = 2**30


def _cv(xs: list[float]) -> float:
    mean = statistics.fmean(xs)
    return statistics.stdev(xs) / mean if len(xs) > 1 and mean > 0 else 0.0


def _expected(name: str, t: Any, warmup: int, items: float | None, unit: str | None) -> dict[str, Any]:
    median = statistics.median(t.per_call_s)
    extra: dict[str, Any] = {
        "shortest_rep_s": min(t.rep_s),
        "cpu_cv": _cv(t.cpu_per_call_s) if t.cpu_per_call_s else None,
    }
    if t.reference_cpu_per_call_s:
        extra |= {
            "cpu_per_call_s": t.cpu_per_call_s,
            "reference_cpu_per_call_s": t.reference_cpu_per_call_s,
            "reference_cv": _cv(t.reference_per_call_s),
            "reference_cpu_cv": _cv(t.reference_cpu_per_call_s),
        }
    return {
        "name": name, "reps": len(t.per_call_s), "warmup": warmup, "min_s": min(t.per_call_s),
        "median_s": median, "mean_s": statistics.fmean(t.per_call_s), "cv": _cv(t.per_call_s),
        "rate": items / median if items is not None else None, "rate_unit": unit,
        "calls_per_rep": t.calls_per_rep, "extra": extra, "not_run": None,
    }  # fmt: skip


@checker(
    observes=["timings", "results_differing", "differing", "memory_gib", "memory_within_readings"],
    ids=["FALSIFY-BREP-006"],
)
def summaries_by_formula() -> dict[str, Any]:
    """summarize_timing on three Timings; available_memory_gib on the CPU between two psutil readings."""

    timings = [
        ("with-reference", Timing([0.004, 0.005, 0.0045, 0.006], [0.016, 0.02, 0.018, 0.024], 4, [0.01], 3,
                                  [0.0039, 0.0048, 0.0044, 0.0058], [0.001, 0.0011, 0.0012, 0.0010],
                                  [0.00095, 0.00105, 0.0012, 0.001]), 2, 512.0, "tokens/s"),
        ("no-reference", Timing([0.02, 0.03, 0.025], [0.02, 0.03, 0.025], 1, [], 0, [0.019, 0.028, 0.026]),
         0, None, None),
        ("no-cpu-times", Timing([0.1, 0.1], [0.2, 0.2], 2, [0.3, 0.1], 5), 2, 3.0, "steps/s"),
    ]  # fmt: skip
    differing = []
    for name, timing, warmup, items, unit in timings:
        got = summarize_timing(name, timing, warmup, items, unit).to_dict()
        want = _expected(name, timing, warmup, items, unit)
        if got != want:
            differing.append(f"{name}: {got} != {want}")
    before = psutil.virtual_memory().available / GIB
    memory = available_memory_gib(torch.device("cpu"))
    after = psutil.virtual_memory().available / GIB
    return {
        "timings": len(timings),
        "results_differing": len(differing),
        "differing": differing,
        "memory_gib": memory,
        "memory_within_readings": min(before, after) * 0.9 <= memory <= max(before, after) * 1.1,
    }
