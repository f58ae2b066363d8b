"""Measurements that know how noisy they were, and the one rule that turns noise into ``inconclusive``.

A checker that times or weighs something returns a :class:`Measured` for that observation instead
of a bare number: its best estimate, the interval the machine's noise leaves it in, and the noise
figures that set the interval (a reference workload's dispersion, CPU time against wall time, the
load average).  The harness judges ``expect`` at the estimate *and* at every corner of those
intervals (:func:`decides`): when every corner gives the same answer the verdict is that answer;
when they disagree the measurement could not decide the bound and the verdict is
``inconclusive``, with the figures in the evidence.  So a busy machine can make a verdict
inconclusive, never falsified, and a noisy pass never counts as survived.

The helpers build such intervals from what is cheap to measure on any machine:

- :func:`dispersion`: a coefficient of variation, its low end lowered by the dispersion of a
  reference workload timed between the same repetitions (the machine's own noise floor);
- :func:`median_interval`: a distribution-free confidence interval for a median (order
  statistics), for medians of interleaved ratios;
- :func:`rate_interval`: work per second between the slowest wall time and the CPU time the work
  really got (a process that waited for a core ran slower than its code);
- :func:`machine_noise`: load average and core count, recorded beside every interval;
- :func:`cpu_seconds`: the process's CPU time, read so that it stays exact under a CPU-time limit.

Torch-free: it is part of the harness.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MEASURED_TAG = "pv_measured"  # how a Measured travels as JSON (a launched rank's report)
MAX_CORNERS = 256  # 2**8: at most eight noisy observations in one expect


@dataclass(frozen=True)
class Measured:
    """A measured figure: ``value`` and the interval [``low``, ``high``] the noise leaves it in."""

    value: float
    low: float
    high: float
    noise: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("value", "low", "high"):
            if not isinstance(getattr(self, name), int | float):
                raise TypeError(f"Measured.{name} must be a number, not {type(getattr(self, name)).__name__}")
        if all(math.isfinite(v) for v in (self.value, self.low, self.high)) and not (
            self.low <= self.value <= self.high
        ):
            raise ValueError(f"Measured needs low <= value <= high, got {self.low} <= {self.value} <= {self.high}")

    def to_json(self) -> dict[str, Any]:
        return {
            MEASURED_TAG: True,
            "value": float(self.value),
            "low": float(self.low),
            "high": float(self.high),
            "noise": dict(self.noise),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measured:
        return cls(float(data["value"]), float(data["low"]), float(data["high"]), dict(data.get("noise") or {}))


def is_measured_json(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get(MEASURED_TAG) is True


# --- the rule ---------------------------------------------------------------------------------


def corners(env: Mapping[str, Any], intervals: Mapping[str, Sequence[float]]) -> list[dict[str, Any]]:
    """``env`` with every combination of its noisy names set to their interval's ends."""
    names = sorted(n for n in intervals if n in env)
    if 2 ** len(names) > MAX_CORNERS:
        raise ValueError(f"expect reads {len(names)} noisy observations; at most {int(math.log2(MAX_CORNERS))}")
    out = []
    for ends in itertools.product(*[(intervals[n][0], intervals[n][1]) for n in names]):
        out.append({**env, **dict(zip(names, ends, strict=True))})
    return out


def decides(
    holds: Callable[[Mapping[str, Any]], bool], env: Mapping[str, Any], intervals: Mapping[str, Sequence[float]]
) -> bool | None:
    """True or False when ``holds`` gives that answer at the estimate and at every corner of the
    intervals; None when the noise leaves both answers possible (the measurement cannot decide).

    Comparisons are monotone in each observation, so the corners bound every value inside."""
    at_value = holds(env)
    if not intervals:
        return at_value
    for corner in corners(env, intervals):
        if holds(corner) != at_value:
            return None
    return at_value


# --- building intervals -----------------------------------------------------------------------


def cpu_seconds() -> float:
    """User plus system CPU seconds of this process, all its threads.

    ``time.process_time`` reads ``CLOCK_PROCESS_CPUTIME_ID``, which Linux samples at the scheduler
    tick once a process-wide CPU timer is armed (``ulimit -t``, ``RLIMIT_CPU`` set by a batch
    scheduler or a mutation tool's runner): a decode of a few milliseconds then reads 0 s of CPU,
    and a rate's upper end goes to infinity.  ``getrusage`` sums the threads' exact run times."""
    try:
        import resource
    except ImportError:  # not on Windows, where no such limit is armed
        return time.process_time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_noise() -> dict[str, float]:
    """The 1-minute load average and the cores this process may use (recorded, never judged)."""
    out: dict[str, float] = {}
    with contextlib.suppress(AttributeError, OSError):  # not on every platform
        out["loadavg_1m"] = round(os.getloadavg()[0], 3)
    try:
        out["cpus"] = float(len(os.sched_getaffinity(0)))
    except AttributeError:
        out["cpus"] = float(os.cpu_count() or 1)
    return out


def cv(samples: Sequence[float]) -> float:
    """Sample standard deviation over mean (0.0 for fewer than two samples or a zero mean)."""
    mean = statistics.fmean(samples) if samples else 0.0
    return statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0


def dispersion(samples: Sequence[float], reference: Sequence[float], *, widen: float = 3.0, **noise: Any) -> Measured:
    """The CV of ``samples``, in the interval the sampling error and the machine's noise leave it in.

    ``reference`` holds the times of a fixed workload taken between the same repetitions: its CV is
    the machine's noise floor at those moments.  Noise only adds dispersion (independent sources
    add in variance), so the work's own CV is at most the measured one, give or take the sampling
    error of a CV over n samples (two standard errors, 1/sqrt(2(n-1)) relative); and at least what
    is left after taking ``widen`` times the floor away in quadrature.  On a quiet machine the
    interval is narrow and the bound is decided; on a busy one its low end falls to zero, so a
    high CV caused by the neighbours is inconclusive rather than falsified."""
    if len(samples) < 2 or len(reference) < 2:
        raise ValueError("dispersion needs at least two samples and two reference samples")
    value, floor = cv(samples), cv(reference)
    rel = 2 / math.sqrt(2 * (len(samples) - 1))
    low = math.sqrt(max(0.0, (value * max(0.0, 1 - rel)) ** 2 - (widen * floor) ** 2))
    figures = {"reference_cv": floor, "samples": len(samples), **machine_noise(), **noise}
    return Measured(value, min(low, value), value * (1 + rel), figures)


def worst(measures: Mapping[str, Measured]) -> Measured:
    """The largest of several measured figures: its value, and an interval from the largest low
    end to the largest high end (the maximum of values each inside its interval lies there).
    The figures record which one was largest."""
    if not measures:
        raise ValueError("worst needs at least one measurement")
    name, top = max(measures.items(), key=lambda kv: kv[1].value)
    low = max(m.low for m in measures.values())
    high = max(m.high for m in measures.values())
    return Measured(top.value, min(low, top.value), max(high, top.value), {"largest": name, **top.noise})


def median_interval(samples: Sequence[float], confidence: float = 0.95, **noise: Any) -> Measured:
    """The median of ``samples`` with a distribution-free interval from order statistics.

    The interval is [x_(k), x_(n+1-k)] for the largest k whose binomial(n, 1/2) coverage is at
    least ``confidence``; with fewer than 6 samples no such k exists and it spans min..max."""
    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        raise ValueError("median_interval needs at least one sample")

    def cdf(k: int) -> float:  # P(Binomial(n, 1/2) <= k)
        return sum(math.comb(n, i) for i in range(k + 1)) / 2**n

    k = 1  # [x_(k), x_(n+1-k)] (1-based) covers the median with probability 1 - 2 cdf(k - 1)
    while k + 1 <= (n + 1) // 2 and 1 - 2 * cdf(k) >= confidence:
        k += 1
    low, high = xs[k - 1], xs[n - k]
    return Measured(
        statistics.median(xs), low, high, {"samples": n, "confidence": confidence, **machine_noise(), **noise}
    )


def rate_interval(
    work: float, wall_s: Sequence[float], cpu_s: Sequence[float], threads: int = 1, **noise: Any
) -> Measured:
    """``work`` per second: the median over repeats of ``work / wall``, in an interval from the
    slowest repeat's wall time up to the time the work had a core for (CPU time / ``threads``).

    A repeat whose CPU time over ``threads`` is well below its wall time waited for a core: its
    code could have gone that much faster, so the upper end is what the CPU time allows."""
    if not wall_s or len(wall_s) != len(cpu_s):
        raise ValueError("rate_interval needs one CPU time per wall time")
    rates = [work / w for w in wall_s if w > 0]
    if not rates:
        raise ValueError("rate_interval needs a positive wall time")
    busy = [c / max(threads, 1) for c in cpu_s]
    best = min(min(b, w) for b, w in zip(busy, wall_s, strict=True))
    value = statistics.median(rates)
    high = max(value, work / best) if best > 0 else math.inf
    ratio = statistics.median(c / w for c, w in zip(cpu_s, wall_s, strict=True) if w > 0)
    figures = {"cpu_over_wall": ratio, "threads": threads, "repeats": len(wall_s), **machine_noise(), **noise}
    return Measured(value, min(rates), high, figures)
