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
- :func:`slowdowns`: how much slower than its fastest a reference workload ran at each moment
  (the machine's speed then), the rule both interval builders apply: work that ran slower while
  the reference, timed in the same moments, also ran slower could have been that much faster, so
  the interval reaches there and a miss that only a slowed machine explains is ``inconclusive``;
- :func:`machine_probe` and :func:`interleaved`: a torch-free reference (a copy of a buffer larger
  than a last-level cache, and a hash of a cache-sized one, so that it feels memory bandwidth and
  compute alike) timed right after each repetition of a checker's work; :func:`measured_rate` puts
  the two together for a throughput claim;
- :func:`machine_noise`: load average and core count, recorded beside every interval;
- :func:`cpu_seconds`: the process's CPU time, read so that it stays exact under a CPU-time limit.

Torch-free: it is part of the harness.
"""

from __future__ import annotations

import contextlib
import hashlib
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
        # POSIX only: the resource module does not exist on Windows
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


def slowdowns(reference: Sequence[float], best: float | None = None) -> list[float]:
    """Each reference time over the fastest: 1.0 where the machine ran at its best, 2.0 where the
    same fixed work took twice as long (a neighbour on the core, the caches or the memory bus).
    The fastest is this series' own, or ``best`` when a faster time was seen (the calls of the
    reference :func:`interleaved` makes before the series, to find a quiet moment)."""
    if not reference or min(reference) <= 0:
        raise ValueError("slowdowns needs positive reference times")
    floor = min(reference) if best is None or best <= 0 else min(min(reference), best)
    return [r / floor for r in reference]


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
    figures: dict[str, Any] = {"reference_cv": floor, "samples": len(samples), **machine_noise(), **noise}
    if len(reference) == len(samples) and min(reference) > 0:
        # each repetition at the machine's speed of its own moment: what dispersion is left when
        # the slowdown the reference felt at the same time is taken out
        steady = cv([x / s for x, s in zip(samples, slowdowns(reference), strict=True)])
        figures["cv_at_reference_speed"] = steady
        low = min(low, steady * max(0.0, 1 - rel))
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
    if not 0 <= confidence < 1:  # below 0 the interval would turn inside out; 1 no interval reaches
        raise ValueError(f"median_interval: confidence {confidence!r} must be at least 0 and below 1")
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
    work: float,
    wall_s: Sequence[float],
    cpu_s: Sequence[float],
    threads: int = 1,
    *,
    reference_s: Sequence[float] | None = None,
    reference_best_s: float | None = None,
    **noise: Any,
) -> Measured:
    """``work`` per second: the median over repeats of ``work / wall``, in an interval from the
    slowest repeat's wall time up to the time the work had a core for (CPU time / ``threads``)
    and, with ``reference_s`` (a fixed workload timed right after each repeat), up to the speed
    the work would have had at the machine's best moment of the series.

    A repeat whose CPU time over ``threads`` is well below its wall time waited for a core: its
    code could have gone that much faster.  A repeat that held its core but ran while the reference
    ran ``k`` times slower than its best (a neighbour on the caches or the memory bus) could have
    gone ``k`` times faster: running slower while the machine is slower widens the interval, and a
    rate below its bound only then is inconclusive; a rate below it while the reference ran at its
    best is a decided miss."""
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
    figures: dict[str, Any] = {"cpu_over_wall": ratio, "threads": threads, "repeats": len(wall_s)}
    if reference_s is not None:
        if len(reference_s) != len(wall_s):
            raise ValueError("rate_interval needs one reference time per wall time")
        slow = slowdowns(reference_s, reference_best_s)
        at_best = [work * k / w for w, k in zip(wall_s, slow, strict=True) if w > 0]
        # the upper end of a 75 % interval of the median speed at the machine's best (order statistics):
        # one repeat whose reference alone stumbled does not stretch the interval by itself
        high = max(high, median_interval(at_best, confidence=0.75).high)
        figures["reference_slowdown_max"] = max(slow)
        figures["rate_at_reference_speed"] = statistics.median(at_best)
    figures |= {**machine_noise(), **noise}
    return Measured(value, min(rates), high, figures)


def machine_probe(buffer_mib: int = 32, hashed_kib: int = 256) -> Callable[[], None]:
    """A fixed, torch-free piece of work whose time is the machine's speed now: one copy of a
    ``buffer_mib`` buffer (larger than most last-level caches, so it feels memory bandwidth) and a
    sha256 of a ``hashed_kib`` one (cache-resident integer work).  A few milliseconds a call."""
    src = bytearray(os.urandom(1 << 16)) * ((buffer_mib << 20) >> 16)
    dst = bytearray(len(src))
    small = bytes(src[: hashed_kib << 10])

    def probe() -> None:
        dst[:] = src
        hashlib.sha256(small).digest()

    return probe


@dataclass(frozen=True)
class Interleaved:
    """Repeats of a piece of work, each followed by one call of a reference in the same moments."""

    wall_s: list[float]
    cpu_s: list[float]
    reference_s: list[float]
    reference_best_s: float  # the fastest call of the reference, the series' and the calibration's


def interleaved(
    fn: Callable[[], object],
    repeats: int,
    reference: Callable[[], object] | None = None,
    *,
    warmup: int = 1,
    calibration: int = 10,
    clock: Callable[[], float] = time.perf_counter,
    cpu_clock: Callable[[], float] | None = None,
) -> Interleaved:
    """Time ``repeats`` calls of ``fn`` (wall and CPU), each followed by one timed call of
    ``reference`` (default :func:`machine_probe`), after ``warmup`` untimed calls of ``fn`` and
    ``calibration`` timed calls of the reference alone (a neighbour that comes and goes leaves a
    quiet moment among them: the machine's best speed).  ``clock`` and ``cpu_clock`` are
    injectable so that a test can script a slow machine."""
    if repeats < 1:
        raise ValueError("interleaved needs at least one repeat")
    ref = reference if reference is not None else machine_probe()
    cpu = cpu_clock or cpu_seconds
    for _ in range(warmup):
        fn()
    best = math.inf
    for _ in range(calibration):
        t0 = clock()
        ref()
        best = min(best, clock() - t0)
    wall, cpus, refs = [], [], []
    for _ in range(repeats):
        c0, t0 = cpu(), clock()
        fn()
        t1, c1 = clock(), cpu()
        ref()
        t2 = clock()
        wall.append(t1 - t0)
        cpus.append(c1 - c0)
        refs.append(t2 - t1)
    return Interleaved(wall, cpus, refs, min(best, *refs))


def measured_rate(
    fn: Callable[[], object],
    work: float,
    repeats: int = 7,
    *,
    threads: int = 1,
    reference: Callable[[], object] | None = None,
    **kwargs: Any,
) -> Measured:
    """``work`` per second of ``fn``, judged against a reference timed in the same moments
    (:func:`interleaved`, :func:`rate_interval`): the way a throughput claim is measured so that a
    busy machine makes it inconclusive, never falsified.  ``kwargs`` go to :func:`interleaved`."""
    t = interleaved(fn, repeats, reference, **kwargs)
    return rate_interval(
        work, t.wall_s, t.cpu_s, threads, reference_s=t.reference_s, reference_best_s=t.reference_best_s
    )
