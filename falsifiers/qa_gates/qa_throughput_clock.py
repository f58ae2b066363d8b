"""The throughput gate's figures on a scripted clock: pv.noise.rate_interval of the decodes it timed.

The gate times ``THROUGHPUT_REPEATS`` greedy decodes by wall and CPU clock and judges the median
rate within the interval the CPU time allows (a repeat that waited for a core could have been that
much faster).  Here ``engine.qa``'s clock and decoder are replaced by a script whose every decode
costs a known wall and CPU time and produces a known number of tokens (fewer than asked, as a
decode stopped on EOS), with the CPU clock far from zero, so the value, interval, status, CPU/wall
figure and detail the gate reports are compared with ``rate_interval`` of the scripted series and
the gate's documented wording, for no bound and for bounds below, inside and above the interval.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

import engine.qa as qa
from engine.qa import THROUGHPUT_REPEATS, QAOptions, run_qa
from pv.checkers import checker
from pv.noise import rate_interval

# dyadic seconds, so the clock's sums and differences are exact and the gate's series is these
WALLS = (0.5, 0.375, 0.625, 0.4375, 0.5625)  # seconds per timed decode
CPUS = (0.5, 0.25, 0.625, 0.3125, 0.5)  # the second and fourth waited for a core
CPU_START = 1024.0  # the process's CPU clock when the gate starts: far from zero
PRODUCED = 20  # tokens each decode gives back, of the 32 asked


class _Script:
    """The wall clock and the CPU clock (``pv.noise.cpu_seconds``) advanced only by the scripted decodes."""

    def __init__(self) -> None:
        self.wall, self.cpu, self.timed = 64.0, CPU_START, 0

    def perf_counter(self) -> float:
        return self.wall

    def cpu_seconds(self) -> float:
        return self.cpu

    def greedy(self, _loaded: Any, _prompt: str, max_new_tokens: int) -> list[int]:
        if max_new_tokens == 2:  # the gate's warm-up: not timed, costs a little
            self.wall, self.cpu = self.wall + 0.125, self.cpu + 0.125
            return [5, 6]
        self.wall += WALLS[self.timed % len(WALLS)]
        self.cpu += CPUS[self.timed % len(CPUS)]
        self.timed += 1
        return list(range(7, 7 + min(PRODUCED, max_new_tokens)))


@contextlib.contextmanager
def _scripted(script: _Script) -> Iterator[None]:

    saved = qa.time, qa.cpu_seconds, qa.greedy
    qa.time = types.SimpleNamespace(perf_counter=script.perf_counter)  # type: ignore[assignment]
    qa.cpu_seconds, qa.greedy = script.cpu_seconds, script.greedy  # type: ignore[assignment]
    try:
        yield
    finally:
        qa.time, qa.cpu_seconds, qa.greedy = saved


@checker(observes=["gates", "timed_decodes", "mismatches", "statuses"], ids=["FALSIFY-QAG-008"])
def throughput_on_a_scripted_clock(pretrained_init: Path) -> dict[str, Any]:
    """``run_qa`` with only the throughput gate, with no bound and three bounds, on the script."""

    expected = rate_interval(PRODUCED, WALLS, CPUS, threads=torch.get_num_threads())
    bounds: list[float | None] = [None, expected.low * 0.9, (expected.low + expected.high) / 2, expected.high * 1.1]
    out: dict[str, Any] = {"gates": 0, "timed_decodes": 0, "mismatches": 0, "statuses": []}
    for bound in bounds:
        script = _Script()
        with _scripted(script):
            report = run_qa(pretrained_init, QAOptions(min_tokens_per_s=bound, gates=("throughput",)))
        gate = report.gate("throughput")
        out["gates"] += 1
        out["timed_decodes"] += script.timed
        status = (
            "skipped" if bound is None
            else "pass" if expected.low >= bound
            else "fail" if expected.high < bound
            else "inconclusive"
        )  # fmt: skip
        detail = (
            f"{PRODUCED} tokens x {THROUGHPUT_REPEATS}, median of rates; {expected.low:.4g}..{expected.high:.4g} "
            f"tok/s within the noise (CPU/wall {expected.noise['cpu_over_wall']:.2f})"
        )
        detail += "; no bound given" if bound is None else ""
        detail += "; the machine was too busy to decide the floor" if status == "inconclusive" else ""
        seen = (gate.status, gate.value, gate.bound, tuple(gate.interval or ()), gate.detail)
        want = (status, expected.value, bound, (expected.low, expected.high), detail)
        out["mismatches"] += sum(a != b for a, b in zip(seen, want, strict=True))
        out["statuses"].append(gate.status)
    return out
