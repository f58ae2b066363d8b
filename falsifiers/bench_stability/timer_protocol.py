"""The brick timer's protocol, step by step, on a clock that moves only when a call says so.

FALSIFY-BENCH-008 checks the timer's report against the truth of a jittered scripted run.  Here
the whole protocol ``engine.bricks.time_call`` documents is written out and run beside it on
calls of exactly known cost (binary fractions of a second, so every clock sum is exact): the
warm-up calls' own times; calibration (a batch of 1, then batches aiming at half the target, at
least doubling and at most x100, until one lasts a quarter of the target; then the calls that last
1.25 times the target); the repetitions; the re-timing when repetitions come out short (the calls
get faster after calibration), at most twice, the discarded calls counted as calibration; the
reference workload's own warm-up, calibration and one repetition after each of the brick's; and
the refusals of a request that cannot give a spread.  Every wall-clock field of the Timing must be
the protocol's, exactly.  The cases sit on the protocol's edges: a repetition exactly at the target,
a batch a fifth of the target long, batches capped at a hundredfold, calls the clock cannot see, a
re-timing that only the floor of one call more decides.  The CPU-time series (real process time,
not scripted) must be non-negative and, multiplied back into repetitions, no more than the process
spent in the call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from engine.bricks import time_call
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker
from pv.noise import cpu_seconds

MARGIN, RETIMES = 1.25, 2  # documented: calls per repetition aim at 1.25 x the target; 2 re-timings at most


class Scripted:
    """A clock and the calls that move it: call ``i`` costs ``cost(i)`` seconds."""

    def __init__(self, cost: Callable[[int], float]) -> None:
        self.now, self.calls, self.cost = 0.0, 0, cost

    def clock(self) -> float:
        return self.now

    def call(self) -> None:
        self.now += self.cost(self.calls)
        self.calls += 1


def _batch(s: Scripted, n: int) -> float:
    t0 = s.now
    for _ in range(n):
        s.call()
    return s.now - t0


def _calibrate(s: Scripted, target: float) -> tuple[int, int]:
    if target <= 0:
        return 1, 0
    n, spent = 1, 0
    while True:
        dt = _batch(s, n)
        spent += n
        if dt >= target / 4:
            return max(1, math.ceil(MARGIN * target * n / dt * (1 - 1e-9))), spent
        n = min(100 * n, max(2 * n, math.ceil(target / 2 * n / dt) if dt > 0 else 100 * n))


def protocol(
    cost: Callable[[int], float], warmup: int, reps: int, target: float, ref_cost: Callable[[int], float] | None
) -> dict[str, Any]:
    """The documented protocol run on scripted calls: the Timing's wall-clock fields."""
    s = Scripted(cost)
    ref = Scripted(ref_cost) if ref_cost is not None else None
    warm = [_batch(s, 1) for _ in range(warmup)]
    n, spent = _calibrate(s, target)
    m = 0
    if ref is not None:
        for _ in range(max(warmup, 1)):
            _batch(ref, 1)
        m, _ = _calibrate(ref, target)
    retimes = 0
    for attempt in range(RETIMES + 1):
        rep_s, ref_s = [], []
        for _ in range(reps):
            rep_s.append(_batch(s, n))
            if ref is not None:
                ref_s.append(_batch(ref, m) / m)
        if min(rep_s) >= target or attempt == RETIMES:
            break
        spent += reps * n
        n = max(n + 1, math.ceil(MARGIN * target * n / min(rep_s)))
        retimes += 1
    return {
        "retimes": retimes,
        "reference_calls_per_rep": m,
        "per_call_s": [t / n for t in rep_s],
        "rep_s": rep_s,
        "calls_per_rep": n,
        "warmup_s": warm,
        "calibration_calls": spent,
        "reference_per_call_s": ref_s,
        "calls": s.calls,
        "reference_calls": ref.calls if ref is not None else 0,
    }


MS = 2.0**-10  # about a millisecond, exact in binary
SLACK_S = 1e-9  # a CPU figure divided by its calls and multiplied back may gain a rounding ulp


def _cases() -> list[tuple[str, Callable[[int], float], int, int, float, Callable[[int], float] | None]]:
    """(what, a call's cost by index, warmup, reps, target seconds, the reference's cost)."""
    return [
        ("steady calls, no target", lambda i: MS, 2, 3, 0.0, None),
        ("steady calls, a target", lambda i: MS / 8, 3, 4, 16 * MS, None),
        ("a slow first call", lambda i: 64 * MS if i == 0 else MS / 4, 1, 3, 8 * MS, None),
        ("faster after calibration", lambda i: MS if i < 40 else MS / 4, 2, 3, 16 * MS, None),
        ("always faster", lambda i: MS / 2 ** min(i // 8, 12), 0, 2, 8 * MS, None),
        ("with a reference", lambda i: MS / 2, 2, 3, 8 * MS, lambda i: MS / 16 if i else MS),
        ("a call longer than the target", lambda i: 4 * MS, 1, 2, MS, lambda i: MS / 4),
        # repetitions of 16 calls at 25/32 ms last the 12.5 ms target exactly: no re-timing
        ("a repetition exactly at the target", lambda i: MS if i < 10 else MS * 25 / 32, 2, 3, 12.5 * MS, None),
        # one call per repetition, then 3/4 of the target: re-timed with the floor of one call more
        ("one call, then faster", lambda i: 2 * MS if i < 2 else MS * 3 / 4, 1, 2, MS, None),
        # two batches the clock sees as taking no time: each is a hundred times the last
        ("calls too fast for the clock", lambda i: 0.0 if i < 101 else MS / 4, 0, 2, 4 * MS, None),
        ("batches grown a hundredfold", lambda i: MS / 256, 1, 2, 16 * MS, None),
        ("a slow first call, a short batch", lambda i: 3 * MS if i == 0 else MS, 0, 2, 16 * MS, None),
        ("a first call between a fifth and a quarter", lambda i: MS * 7 / 2, 0, 2, 16 * MS, None),
    ]


@checker(
    observes=[
        "cases",
        "cases_differing",
        "cpu_series_outside",
        "differing",
        "retimes",
        "refusals",
        "refusals_differing",
    ],
    ids=["FALSIFY-BENCH-009"],
)
def timer_follows_its_protocol() -> dict[str, Any]:
    """time_call on each scripted case above against the protocol written out here; then three
    requests it must refuse."""

    cpu = torch.device("cpu")
    differing: list[str] = []
    cpu_outside: list[str] = []
    retimes: list[int] = []
    for what, cost, warmup, reps, target, ref_cost in _cases():
        want = protocol(cost, warmup, reps, target, ref_cost)
        seen_retimes = want.pop("retimes")
        m = want.pop("reference_calls_per_rep")
        s = Scripted(cost)
        ref = Scripted(ref_cost) if ref_cost is not None else None

        def reference_call(r: Scripted | None = ref, brick: Scripted = s) -> None:
            if r is not None:
                brick.now += r.cost(r.calls)  # the reference's calls move the same clock
                r.calls += 1

        # min_rep_s is left at its default where the case has no target
        target_kwargs = {"min_rep_s": target} if target else {}
        cpu0 = cpu_seconds()
        got = time_call(
            s.call, warmup=warmup, reps=reps, device=cpu, clock=s.clock,
            reference=reference_call if ref is not None else None, **target_kwargs,
        )  # fmt: skip
        cpu_spent = cpu_seconds() - cpu0
        seen = {
            "per_call_s": got.per_call_s, "rep_s": got.rep_s, "calls_per_rep": got.calls_per_rep,
            "warmup_s": got.warmup_s, "calibration_calls": got.calibration_calls,
            "reference_per_call_s": got.reference_per_call_s, "calls": s.calls,
            "reference_calls": ref.calls if ref is not None else 0,
        }  # fmt: skip
        seen_cpu = len(got.cpu_per_call_s) == reps and len(got.reference_cpu_per_call_s) == (reps if ref else 0)
        if seen != want or not seen_cpu:
            differing.append(f"{what}: {seen} != {want}")
        # the CPU series are the process's CPU time over those repetitions, per call: never below
        # 0, and put back together (times the protocol's calls per repetition, the brick's and the
        # reference's) they cannot exceed what the process spent inside time_call
        cpu_reps = sum(c * got.calls_per_rep for c in got.cpu_per_call_s)
        ref_cpu = sum(c * m for c in got.reference_cpu_per_call_s)
        series = [*got.cpu_per_call_s, *got.reference_cpu_per_call_s]
        if min(series) < 0 or cpu_reps > cpu_spent + SLACK_S or ref_cpu > cpu_spent + SLACK_S:
            cpu_outside.append(f"{what}: repetitions {cpu_reps} s, reference {ref_cpu} s, spent {cpu_spent} s")
        retimes.append(seen_retimes)
    requests: list[tuple[dict[str, Any], str]] = [
        ({"warmup": 0, "reps": 1}, "reps must be >= 2 to give a spread"),
        ({"warmup": -1, "reps": 2}, "warmup must be >= 0"),
        ({"warmup": 0, "reps": 2, "min_rep_s": -0.5}, "min_rep_s must be >= 0"),
    ]
    cases_differing = len(differing)
    refusals = refusals_differing(
        (partial(time_call, lambda: None, device=cpu, **kwargs), ValueError, message) for kwargs, message in requests
    )
    differing += refusals + cpu_outside
    return {
        "cases": len(_cases()),
        "cases_differing": cases_differing,
        "cpu_series_outside": len(cpu_outside),
        "differing": differing,
        "retimes": retimes,
        "refusals": len(requests),
        "refusals_differing": len(refusals),
    }
