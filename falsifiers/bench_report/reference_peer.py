"""The bench's reference series: the fixed piece of work it says, timed right after each repetition.

Every brick's JSON carries ``reference_cpu_per_call_s`` and ``reference_cv``: the machine's own noise
at the moments the brick ran, against which pv.noise judges the brick's CV.  That judgement means
something only if the reference is the same work every time and is timed where the protocol says.

- The work: torch's own ``FlopCounterMode`` counts its floating-point operations (four chained
  ``REFERENCE_SIZE`` square matmuls, 2·n³ each), and its result equals the chain written out here
  from the documented seed; two builds and two calls give the same tensor.
- The timing: on a scripted clock whose every call's cost is known, the timed part of
  ``time_call(..., reference=...)`` is ``reps`` blocks of the brick's ``calls_per_rep`` calls, each
  followed by one block of the reference's own calls; each reference figure is that block's true
  time over its call count, each block lasts ``min_rep_s`` or more, and ``summarize_timing``'s
  ``reference_cv`` is stdev / mean of those figures.  Without a reference nothing of it is reported.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from engine.bricks import REFERENCE_SIZE, reference_workload, summarize_timing, time_call
from falsifiers.shared.clocks import _ScriptedClock
from pv.checkers import checker

MATMULS = 4  # the documented chain


def _written_out(size: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g)
    b = torch.randn(size, size, generator=g) / size**0.5
    x = a
    for _ in range(MATMULS):
        x = torch.tanh(x @ b)
    return x


def _blocks(events: list[str]) -> list[tuple[str, int]]:
    """Runs of equal consecutive events: [("fn", 3), ("ref", 2), ...]."""
    runs: list[tuple[str, int]] = []
    for e in events:
        if runs and runs[-1][0] == e:
            runs[-1] = (e, runs[-1][1] + 1)
        else:
            runs.append((e, 1))
    return runs


@checker(
    observes=[
        "flops", "flops_expected", "equals_written_out", "same_every_build", "reps", "timed_blocks_in_order",
        "reference_blocks_short", "reference_max_rel_error", "reference_cpu_series", "reference_cv_abs_error",
        "reported_without_reference",
    ],
    ids=["FALSIFY-BREP-003"],
)  # fmt: skip
def reference_series_is_the_fixed_work(
    reps: int, warmup: int, min_rep_s: float, call_s: float, reference_s: float, jitter: float, seed: int = 0
) -> dict[str, Any]:
    """The reference workload's FLOPs and value, then ``time_call`` with a reference on a scripted
    clock: brick calls cost ``call_s`` and reference calls ``reference_s``, each ± ``jitter``."""

    cpu = torch.device("cpu")
    work = reference_workload(cpu)
    with FlopCounterMode(display=False) as counter:
        first = work()
    second, rebuilt = work(), reference_workload(cpu)()
    out: dict[str, Any] = {
        "flops": counter.get_total_flops(),
        "flops_expected": MATMULS * 2 * REFERENCE_SIZE**3,
        "equals_written_out": isinstance(first, torch.Tensor) and torch.equal(first, _written_out(REFERENCE_SIZE)),
        "same_every_build": torch.equal(first, second) and torch.equal(first, rebuilt),  # type: ignore[arg-type]
    }

    rng = random.Random(seed)
    clock = _ScriptedClock()
    events: list[tuple[str, float, float]] = []  # (who, clock before, clock after)

    def costing(who: str, cost: float) -> Any:
        def call() -> None:
            start = clock.now
            clock.now += cost * (1 + jitter * rng.uniform(-1.0, 1.0))
            events.append((who, start, clock.now))

        return call

    timing = time_call(
        costing("fn", call_s), warmup=warmup, reps=reps, device=cpu, min_rep_s=min_rep_s, clock=clock,
        reference=costing("ref", reference_s),
    )  # fmt: skip
    result = summarize_timing("reference-probe", timing, warmup)
    n = timing.calls_per_rep
    tail = _blocks([e[0] for e in events])[-2 * reps :]
    in_order = len(tail) == 2 * reps and all(
        block == (("fn", n) if k % 2 == 0 else ("ref", tail[1][1])) for k, block in enumerate(tail)
    )
    m = tail[1][1] if len(tail) > 1 else 0
    true_ref: list[float] = []
    if in_order:
        timed = events[len(events) - reps * (n + m) :]
        for k in range(reps):
            block = timed[k * (n + m) + n : (k + 1) * (n + m)]
            true_ref.append(block[-1][2] - block[0][1])
    per_call = [t / m for t in true_ref] if m else []
    errors = [abs(r - t) / t for r, t in zip(timing.reference_per_call_s, per_call, strict=False)]
    reported_cv = result.extra.get("reference_cv")
    out |= {
        "reps": len(timing.reference_per_call_s),
        "timed_blocks_in_order": in_order,
        "reference_blocks_short": sum(t < min_rep_s for t in true_ref) if true_ref else reps,
        "reference_max_rel_error": max(errors) if errors and len(errors) == reps else float("inf"),
        "reference_cpu_series": len(timing.reference_cpu_per_call_s),
        "reference_cv_abs_error": (
            abs(reported_cv - statistics.stdev(per_call) / statistics.fmean(per_call))
            if isinstance(reported_cv, float) and len(per_call) > 1
            else float("inf")
        ),
    }
    bare = time_call(costing("fn", call_s), warmup=warmup, reps=reps, device=cpu, min_rep_s=min_rep_s, clock=clock)
    bare_report = summarize_timing("bare-probe", bare, warmup).extra
    out["reported_without_reference"] = (
        len(bare.reference_per_call_s)
        + len(bare.reference_cpu_per_call_s)
        + sum(k.startswith("reference") for k in bare_report)
    )
    return out
