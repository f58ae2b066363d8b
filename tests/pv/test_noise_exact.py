"""pv/noise.py to the number: each interval's ends from the documented rule on figures worked by
hand, the boundaries of every argument check, and what each measurement records beside its value.
A noise interval a little too wide turns a falsified claim inconclusive; a little too narrow, a
busy machine into a falsified claim: both are wrong verdicts."""

from __future__ import annotations

import math
import os
import statistics
import types
from typing import Any

import pytest

import pv.noise as noise
from pv.noise import (
    MAX_CORNERS,
    Measured,
    corners,
    cv,
    dispersion,
    interleaved,
    machine_noise,
    measured_rate,
    median_interval,
    rate_interval,
    slowdowns,
    worst,
)


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose load and cores are known, so the figures each measurement records are too."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1.23456, 2.0, 3.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})


MACHINE = {"loadavg_1m": 1.235, "cpus": 3.0}


def _raises(exc: type[Exception], message: str, fn: Any, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(exc) as caught:
        fn(*args, **kwargs)
    assert str(caught.value) == message


# --- what the machine was doing ------------------------------------------------------------------


def test_machine_noise_records_the_load_and_the_usable_cores() -> None:
    assert machine_noise() == MACHINE


def test_machine_noise_without_the_platforms_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "getloadavg")
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert machine_noise() == {"cpus": 4.0}
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one
    assert machine_noise() == {"cpus": 1.0}


def test_machine_noise_when_the_load_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> tuple[float, float, float]:
        raise OSError("no /proc/loadavg")

    monkeypatch.setattr(os, "getloadavg", unreadable)
    assert machine_noise() == {"cpus": 3.0}


def test_cpu_seconds_adds_user_and_system_time_of_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    asked: list[int] = []

    def usage(who: int) -> types.SimpleNamespace:
        asked.append(who)
        return types.SimpleNamespace(ru_utime=1.5, ru_stime=0.25)

    monkeypatch.setattr(resource, "getrusage", usage)
    assert noise.cpu_seconds() == 1.75 and asked == [resource.RUSAGE_SELF]


# --- Measured and corners ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["value", "low", "high"])
def test_measured_names_the_field_that_is_not_a_number(field: str) -> None:
    args = {"value": 1.0, "low": 0.5, "high": 2.0, field: "x"}
    _raises(TypeError, f"Measured.{field} must be a number, not str", Measured, **args)


def test_corners_up_to_the_cap_and_not_one_more() -> None:
    most = int(math.log2(MAX_CORNERS))
    env = {f"n{i}": 1.0 for i in range(most + 1)}
    intervals = {name: (0.0, 2.0) for name in env}
    six = {k: intervals[k] for k in list(env)[:6]}
    assert len(corners(env, six)) == 64
    capped = {k: intervals[k] for k in list(env)[:most]}
    assert len(corners(env, capped)) == MAX_CORNERS
    _raises(ValueError, f"expect reads {most + 1} noisy observations; at most {most}", corners, env, intervals)


# --- dispersion --------------------------------------------------------------------------------


def test_cv_edges() -> None:
    assert cv([]) == 0.0 and cv([5.0]) == 0.0
    assert cv([0.0, 0.0]) == 0.0 and cv([-1.0, 1.0]) == 0.0 and cv([-2.0, -4.0]) == 0.0  # no positive mean
    assert cv([2.0, 4.0]) == pytest.approx(math.sqrt(2) / 3, rel=1e-12)


def _dispersion_by_hand(samples: list[float], reference: list[float], widen: float) -> tuple[float, float, float]:
    """The rule as docs/noise.md states it, computed apart from pv."""
    mean = sum(samples) / len(samples)
    value = math.sqrt(sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)) / mean
    rmean = sum(reference) / len(reference)
    floor = math.sqrt(sum((x - rmean) ** 2 for x in reference) / (len(reference) - 1)) / rmean
    rel = 2 / math.sqrt(2 * (len(samples) - 1))
    shrunk = value * max(0.0, 1 - rel)
    low = math.sqrt(max(0.0, shrunk**2 - (widen * floor) ** 2))
    return value, low, value * (1 + rel)


def test_dispersion_without_a_paired_reference() -> None:
    samples = [10.0, 14.0, 9.0, 16.0, 8.0, 15.0, 11.0, 13.0, 9.5, 14.5, 10.5, 12.5]
    reference = [1.0, 1.01, 1.0]  # not one per sample: only the floor is used
    for widen in (3.0, 1.0):
        got = dispersion(samples, reference, widen=widen, tag="x")
        value, low, high = _dispersion_by_hand(samples, reference, widen)
        assert (got.value, got.low, got.high) == pytest.approx((value, low, high), rel=1e-12)
        assert low > 0  # the floor is small against the spread: the low end is decided
        assert got.noise == {"reference_cv": pytest.approx(cv(reference)), "samples": 12, **MACHINE, "tag": "x"}
    assert dispersion(samples, reference).low == pytest.approx(_dispersion_by_hand(samples, reference, 3.0)[1])


def test_dispersion_at_the_reference_speed() -> None:
    # the work and the reference slowed down together: at the reference's speed the work is steady
    reference = [1.0, 2.0, 1.0, 1.5, 1.0]
    samples = [10.0 * r for r in reference]
    got = dispersion(samples, reference)
    rel = 2 / math.sqrt(2 * 4)
    assert got.noise["cv_at_reference_speed"] == pytest.approx(0.0, abs=1e-12)
    assert got.low == pytest.approx(0.0, abs=1e-12) and got.high == pytest.approx(cv(samples) * (1 + rel))
    # a reference slowed by a factor the work did not feel: the steady CV is the work's own, over k
    reference = [2.0, 1.0, 1.0, 1.0]
    samples = [10.0, 10.0, 12.0, 8.0]
    got = dispersion(samples, reference, widen=0.0)
    steady = cv([x / (r / 1.0) for x, r in zip(samples, reference, strict=True)])
    assert got.noise["cv_at_reference_speed"] == pytest.approx(steady)
    rel = 2 / math.sqrt(2 * 3)
    assert got.low == pytest.approx(min(cv(samples) * (1 - rel), steady * max(0.0, 1 - rel)))


def test_dispersion_needs_a_positive_paired_reference_to_pair() -> None:
    got = dispersion([10.0, 12.0, 11.0], [0.0, 1.0, 1.0])  # a zero time cannot give a speed
    assert "cv_at_reference_speed" not in got.noise
    got = dispersion([10.0, 12.0, 11.0], [0.5, 0.7, 0.6])  # under a second is a time like any
    assert "cv_at_reference_speed" in got.noise


def test_dispersion_needs_two_of_each() -> None:
    dispersion([1.0, 2.0], [1.0, 1.1])
    message = "dispersion needs at least two samples and two reference samples"
    _raises(ValueError, message, dispersion, [1.0], [1.0, 1.1])
    _raises(ValueError, message, dispersion, [1.0, 2.0], [1.0])


# --- slowdowns, worst --------------------------------------------------------------------------


def test_slowdowns() -> None:
    assert slowdowns([2.0, 4.0, 3.0]) == [1.0, 2.0, 1.5]
    assert slowdowns([2.0, 4.0], best=1.0) == [2.0, 4.0]
    assert slowdowns([2.0, 4.0], best=3.0) == [1.0, 2.0]  # a slower "best" is not the best
    assert slowdowns([2.0, 4.0], best=0.0) == [1.0, 2.0]  # nor a zero one
    for bad in ([], [0.0, 1.0], [-1.0, 1.0]):
        _raises(ValueError, "slowdowns needs positive reference times", slowdowns, bad)


def test_worst_names_the_largest_value() -> None:
    got = worst({"b": Measured(3.0, 1.0, 4.0, {"n": 1}), "a": Measured(5.0, 4.5, 6.0, {"n": 2})})
    assert (got.value, got.low, got.high, dict(got.noise)) == (5.0, 4.5, 6.0, {"largest": "a", "n": 2})
    _raises(ValueError, "worst needs at least one measurement", worst, {})


# --- median_interval ---------------------------------------------------------------------------


def test_median_interval_order_statistics() -> None:
    xs = [float(i) for i in range(1, 11)]
    got = median_interval(xs, tag="t")
    # n = 10: P(Bin(10, 1/2) <= 1) = 11/1024, so [x_2, x_9] covers the median 97.9 % of the time
    assert (got.value, got.low, got.high) == (5.5, 2.0, 9.0)
    assert got.noise == {"samples": 10, "confidence": 0.95, **MACHINE, "tag": "t"}
    exactly = 1 - 2 * 56 / 1024  # asked for exactly what [x_3, x_8] covers: that interval is enough
    assert (median_interval(xs, confidence=exactly).low, median_interval(xs, confidence=exactly).high) == (3.0, 8.0)
    # with no confidence asked for, the interval shrinks to the middle order statistics
    assert (median_interval(xs[:4], confidence=0.0).low, median_interval(xs[:4], confidence=0.0).high) == (2.0, 3.0)
    assert (median_interval(xs[:5], confidence=0.0).low, median_interval(xs[:5], confidence=0.0).high) == (3.0, 3.0)
    one = median_interval([7.0])
    assert (one.value, one.low, one.high) == (7.0, 7.0, 7.0)
    _raises(ValueError, "median_interval needs at least one sample", median_interval, [])


# --- rate_interval -----------------------------------------------------------------------------


def test_rate_interval_by_hand() -> None:
    got = rate_interval(100.0, [1.0, 2.0, 4.0], [1.0, 1.0, 4.0], threads=2, tag="r")
    # rates 100, 50, 25; the fastest core time is 1.0 CPU-s over 2 threads = 0.5 s: 200 per second
    assert (got.value, got.low, got.high) == (50.0, 25.0, 200.0)
    assert got.noise == {"cpu_over_wall": 1.0, "threads": 2, "repeats": 3, **MACHINE, "tag": "r"}


def test_rate_interval_skips_zero_wall_times_and_reads_a_zero_cpu_time_as_unbounded() -> None:
    got = rate_interval(100.0, [0.0, 1.0, 2.0], [1.0, 1.0, 2.0])
    assert (got.value, got.low) == (75.0, 50.0) and got.noise["cpu_over_wall"] == 1.0
    assert rate_interval(100.0, [1.0, 2.0], [0.0, 2.0]).high == math.inf


def test_rate_interval_with_a_reference() -> None:
    got = rate_interval(100.0, [0.5, 2.0, 4.0], [0.5, 2.0, 4.0], reference_s=[1.0, 1.0, 2.0])
    # at the machine's best moment each repeat would have run k times faster: 200, 50, 50
    assert got.noise["reference_slowdown_max"] == 2.0 and got.noise["rate_at_reference_speed"] == 50.0
    assert got.high == 200.0 and (got.value, got.low) == (50.0, 25.0)
    got = rate_interval(100.0, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], reference_s=[2.0, 2.0, 2.0], reference_best_s=1.0)
    assert got.noise["rate_at_reference_speed"] == 200.0 and got.high == 200.0


def test_rate_interval_argument_checks() -> None:
    _raises(ValueError, "rate_interval needs one CPU time per wall time", rate_interval, 1.0, [], [])
    _raises(ValueError, "rate_interval needs one CPU time per wall time", rate_interval, 1.0, [1.0], [1.0, 2.0])
    _raises(ValueError, "rate_interval needs a positive wall time", rate_interval, 1.0, [0.0], [1.0])
    _raises(
        ValueError,
        "rate_interval needs one reference time per wall time",
        rate_interval,
        1.0,
        [1.0, 2.0],
        [1.0, 2.0],
        reference_s=[1.0],
    )


# --- interleaved, measured_rate ----------------------------------------------------------------


class Script:
    """A clock that advances by scripted amounts on each call of the work and the reference."""

    def __init__(self, reference_s: tuple[float, ...] = (0.5,)) -> None:
        self.now = 100.0
        self.cpu = 50.0
        self.calls: list[str] = []
        self.reference_s = list(reference_s)

    def clock(self) -> float:
        return self.now

    def cpu_clock(self) -> float:
        return self.cpu

    def work(self) -> None:
        self.calls.append("work")
        self.now += 2.0
        self.cpu += 1.0

    def reference(self) -> None:
        self.calls.append("ref")
        self.now += self.reference_s.pop(0) if len(self.reference_s) > 1 else self.reference_s[0]


def test_interleaved_times_each_repeat_and_its_reference() -> None:
    s = Script((0.5, 0.5, 0.5, 0.25))
    t = interleaved(s.work, 2, s.reference, warmup=1, calibration=2, clock=s.clock, cpu_clock=s.cpu_clock)
    assert s.calls == ["work", "ref", "ref", "work", "ref", "work", "ref"]
    assert t.wall_s == [2.0, 2.0] and t.cpu_s == [1.0, 1.0]
    assert t.reference_s == [0.5, 0.25] and t.reference_best_s == 0.25
    s = Script()
    interleaved(s.work, 1, s.reference, warmup=0, clock=s.clock, cpu_clock=s.cpu_clock)
    assert s.calls.count("ref") == 11  # ten calibration calls by default, then one per repeat
    _raises(ValueError, "interleaved needs at least one repeat", interleaved, s.work, 0, s.reference)


def test_measured_rate_passes_the_threads_and_repeats_on(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script()
    got = measured_rate(s.work, 10.0, threads=2, reference=s.reference, clock=s.clock, cpu_clock=s.cpu_clock)
    assert got.noise["threads"] == 2 and got.noise["repeats"] == 7
    assert got.value == 5.0 and got.high == statistics.median([20.0] * 7)  # 1 CPU-s over 2 threads: 0.5 s


def test_the_default_reference_is_a_fixed_piece_of_work() -> None:
    probe = noise.machine_probe(buffer_mib=1, hashed_kib=4)
    assert probe() is None and probe() is None  # callable again and again
    t = interleaved(lambda: None, 2, calibration=1)  # the machine's own probe by default
    assert len(t.reference_s) == 2 and all(r > 0 for r in t.reference_s) and t.reference_best_s > 0


def test_the_machine_probe_copies_and_hashes_the_sizes_it_is_given() -> None:
    from pv.noise import machine_probe

    def sizes(probe: Any) -> dict[str, int]:
        cells = dict(zip(probe.__code__.co_freevars, probe.__closure__, strict=True))
        return {name: len(cell.cell_contents) for name, cell in cells.items()}

    assert sizes(machine_probe()) == {"dst": 32 << 20, "small": 256 << 10, "src": 32 << 20}
    assert sizes(machine_probe(buffer_mib=2, hashed_kib=8)) == {"dst": 2 << 20, "small": 8 << 10, "src": 2 << 20}


def test_the_reference_takes_out_the_dispersion_the_machine_caused() -> None:
    from pv.noise import cv, dispersion

    reference = [1.0, 1.5, 1.0, 1.5, 1.0, 1.5]
    samples = [1.0, 1.5, 1.0, 1.5, 1.0, 1.52]
    rel = 2 / math.sqrt(10)
    got = dispersion(samples, reference, widen=0.0)
    steady = cv([1.0, 1.0, 1.0, 1.0, 1.0, 1.52 / 1.5])
    assert got.noise["cv_at_reference_speed"] == pytest.approx(steady)
    assert got.low == pytest.approx(steady * (1 - rel)) and got.low < cv(samples) * (1 - rel)


def test_a_median_interval_never_inverts_at_any_confidence() -> None:
    from pv.noise import median_interval

    assert (median_interval([4, 1, 3, 2], confidence=0.0).low, median_interval([4, 1, 3, 2], confidence=0.0).high) == (
        2,
        3,
    )
    for n in range(1, 9):
        for confidence in (0.0, 0.3, 0.5, 0.95):
            m = median_interval(list(range(n)), confidence=confidence)
            assert m.low <= m.value <= m.high, (n, confidence)


def test_a_repeat_of_no_wall_time_is_left_out_of_the_rate_at_the_machine_s_best() -> None:
    from pv.noise import rate_interval

    got = rate_interval(10.0, [0.0, 1.0, 2.0], [0.0, 1.0, 2.0], reference_s=[1.0, 1.0, 1.0])
    assert got.noise["rate_at_reference_speed"] == 7.5 and got.value == 7.5
