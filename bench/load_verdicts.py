"""Do verdicts change when the machine is busy?  The contracts on clean code, quiet and under load.

Runs the selected falsifiers once on a quiet machine, then ``--runs`` times beside a neighbour on
every core, and compares every falsifier's verdict with the quiet run's.  A ``falsified`` (or
``error``) under load that was ``survived`` when quiet is a false verdict caused by the
neighbours (so is one where the quiet run was ``inconclusive``): the target is none.
``inconclusive`` under load is what pv.noise is for, and is counted apart.

The neighbour (``--neighbour``) is ``bursty`` by default: each process switches between copying a
buffer larger than the caches while doing arithmetic, and sleeping, for seeded random spells of
50-600 ms, so the machine's speed changes within one measurement (a steady burner slows the
reference workload as much as the work for the whole run, and tests little).  ``steady`` spins.

``--claim rate`` measures a user's throughput claim instead of the engine's contracts: a small
project in a temporary folder whose ship-blocking falsifier says ``words_per_s >= BOUND`` of a word
counter timed with ``pv.noise.measured_rate``, where BOUND is 90 % of the rate measured quietly in
this run (10 % headroom).

    python bench/load_verdicts.py                       # contracts -m ship_blocking, 5 loaded runs
    python bench/load_verdicts.py --select contracts    # every falsifier, advisory timings included
    python bench/load_verdicts.py --runs 12 --select contracts/bench-stability-v1.yaml
    python bench/load_verdicts.py --runs 12 --claim rate

Verdicts are read from the junit XML pytest writes (pv puts each falsifier's verdict there as the
``pv_verdict`` property).  No evidence is written.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from _figure import add_smoke, figure

ROOT = Path(__file__).resolve().parents[1]


def burn(deadline: float, bursty: bool = False, seed: int = 0) -> None:
    """Load one core until ``deadline`` (time.monotonic): a bounded load that ends by itself.

    ``bursty``: seeded random spells of 50-600 ms of work (a 64 MiB copy, which contends for the
    caches and the memory bus, and arithmetic) and of sleep."""
    rng = random.Random(seed)
    src = bytearray(64 << 20) if bursty else bytearray()
    dst = bytearray(len(src))
    x = 0
    while time.monotonic() < deadline:
        if not bursty:
            x += 1
            continue
        until = min(deadline, time.monotonic() + rng.uniform(0.05, 0.6))
        while time.monotonic() < until:
            dst[:] = src
            for _ in range(20_000):
                x += 1
        time.sleep(max(0.0, min(deadline - time.monotonic(), rng.uniform(0.05, 0.6))))


class Burner:
    """One loading process per core for at most ``seconds``; stopped early on exit."""

    def __init__(self, cores: int, seconds: float, bursty: bool = False, seed: int = 0) -> None:
        self.cores, self.seconds, self.bursty, self.seed = cores, seconds, bursty, seed
        self.procs: list[multiprocessing.Process] = []

    def __enter__(self) -> Burner:
        deadline = time.monotonic() + self.seconds
        ctx = multiprocessing.get_context("spawn")
        self.procs = [
            ctx.Process(target=burn, args=(deadline, self.bursty, self.seed * 1000 + i), daemon=True)
            for i in range(self.cores)
        ]
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(timeout=10)


def verdicts(junit: Path) -> dict[str, str]:
    """Each falsifier's pv verdict (node id -> verdict) from pytest's junit XML."""
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == "pv_verdict":
                out[f"{case.get('classname')}::{case.get('name')}"] = prop.get("value") or "?"
    return out


RATE_CHECKER = """
import pv
from pv.noise import measured_rate

TEXT = "lorem ipsum dolor sit amet " * 200_000
WORDS = len(TEXT.split())


def count_words():
    return len(TEXT.split())


@pv.checker(observes=["words_per_s"], ids=["FALSIFY-RATE-001"])
def word_rate(repeats: int = 7):
    return {"words_per_s": MEASURE}
"""
MEASURES = {
    # pv's rule: a reference timed in the same moments
    "rate": "measured_rate(count_words, WORDS, repeats)",
    # the rule before it, for comparison: the interval from CPU time alone
    "rate-cpu-only": "_cpu_only(repeats)",
}
CPU_ONLY = """

def _cpu_only(repeats):
    import time
    from pv.noise import cpu_seconds, rate_interval

    count_words()
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = cpu_seconds(), time.perf_counter()
        count_words()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    return rate_interval(WORDS, walls, cpus)
"""

RATE_CONTRACT = """\
metadata:
  id: rate-v1
  version: 1.0.0
  status: DRAFT
  description: the word counter keeps its throughput
  changelog:
    - {{version: 1.0.0, date: "2026-12-01", change: initial}}
falsification_tests:
  - id: FALSIFY-RATE-001
    rule: throughput
    prediction: the word counter keeps its throughput
    check: ratechecks.rate:word_rate
    expect: "words_per_s >= {bound}"
    ship_blocking: true
"""


def rate_project(folder: Path, claim: str = "rate") -> float:
    """Write the rate claim's project into ``folder``; its bound (90 % of the quiet rate measured now)."""
    source = RATE_CHECKER.replace("MEASURE", MEASURES[claim]) + CPU_ONLY
    (folder / "ratechecks").mkdir()
    (folder / "ratechecks" / "__init__.py").write_text("")
    (folder / "ratechecks" / "rate.py").write_text(source)
    namespace: dict[str, object] = {}
    exec(compile(source, "rate.py", "exec"), namespace)
    quiet = namespace["word_rate"](repeats=7)["words_per_s"]  # type: ignore[operator,index]
    bound = round(0.9 * quiet.value)
    (folder / "contracts").mkdir()
    (folder / "contracts" / "rate-v1.yaml").write_text(RATE_CONTRACT.format(bound=bound))
    (folder / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npv_contracts = "contracts"\npv_checker_packages = "ratechecks"\n'
    )
    print(f"rate claim: quiet rate {quiet.value:,.0f} words/s, bound {bound:,} (10 % headroom)", flush=True)
    return bound


def run_suite(
    select: list[str], workers: str, mutants: bool, junit: Path, cwd: Path = ROOT
) -> tuple[dict[str, str], float]:
    cmd = [sys.executable, "-m", "pytest", *select, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += ["--pv-no-evidence", f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    if workers != "0":
        cmd += ["-n", workers]
    if mutants:
        cmd.append("--pv-mutants")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if not junit.is_file():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"pytest wrote no junit XML (exit {proc.returncode})")
    pv_line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("pv: ")), "")
    print(f"  {elapsed:6.0f} s  {pv_line}", flush=True)
    return verdicts(junit), elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="loaded runs (default 5)")
    parser.add_argument(
        "--select", default="contracts -m ship_blocking", help="pytest arguments choosing the falsifiers"
    )
    parser.add_argument("--workers", default="2", help="pytest-xdist workers for every run (0: none)")
    parser.add_argument("--mutants", action="store_true", help="also run each falsifier's mutant (slower)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="burner processes (default: every core)")
    parser.add_argument("--burn-s", type=float, default=1800.0, help="the longest any burner spins")
    parser.add_argument("--neighbour", choices=("bursty", "steady"), default="bursty", help="the load (default bursty)")
    parser.add_argument(
        "--claim",
        choices=("contracts", *MEASURES),
        default="contracts",
        help="the contracts, or a user's rate claim (rate-cpu-only: its interval without a reference)",
    )
    add_smoke(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.workers, args.burn_s = 1, "0", 120.0
        args.select = "contracts/qlora-memory-v1.yaml -k QMEM-003"
    select = shlex.split(args.select)
    with tempfile.TemporaryDirectory(prefix="pv-load-") as tmp:
        cwd = ROOT
        if args.claim in MEASURES:
            cwd = Path(tmp) / "project"
            cwd.mkdir()
            rate_project(cwd, args.claim)
            select, args.select, args.workers = ["contracts"], "the rate claim", "0"
        print(f"quiet run: pytest {args.select}", flush=True)
        quiet, quiet_s = run_suite(select, args.workers, args.mutants, Path(tmp) / "quiet.xml", cwd)
        rows: list[Counter[str]] = []
        for k in range(args.runs):
            print(
                f"loaded run {k + 1}/{args.runs}: {args.cores} {args.neighbour} neighbour process(es) on "
                f"{os.cpu_count()} cores",
                flush=True,
            )
            with Burner(args.cores, args.burn_s, bursty=args.neighbour == "bursty", seed=k):
                loaded, _ = run_suite(select, args.workers, args.mutants, Path(tmp) / f"loaded{k}.xml", cwd)
            c: Counter[str] = Counter()
            for node, want in quiet.items():
                got = loaded.get(node, "missing")
                if got == want:
                    c["same"] += 1
                    continue
                c["differ"] += 1
                if want in ("survived", "inconclusive") and got in ("falsified", "error"):
                    c["false_" + got] += 1
                    print(f"    FALSE {got.upper()}: {node} (quiet: {want})")
                elif got == "inconclusive":
                    c["inconclusive"] += 1
                else:
                    print(f"    differs: {node}: {want} quiet, {got} loaded")
            rows.append(c)
    total = Counter[str]()
    for c in rows:
        total.update(c)
    print(
        f"{len(quiet)} falsifiers, quiet run {quiet_s:.0f} s; over {args.runs} loaded runs: {total['differ']} verdicts "
        f"differ from the quiet run ({total['inconclusive']} inconclusive), {total['false_falsified']} false "
        f"falsified, {total['false_error']} false errors"
    )
    figure(
        f"{args.claim}, {args.neighbour} neighbour, {args.runs} loaded runs x {len(quiet)} falsifiers: "
        f"{total['false_falsified']} false falsified, "
        f"{total['false_error']} false errors, {total['differ']} differ ({total['inconclusive']} inconclusive)"
    )
    return 1 if total["false_falsified"] or total["false_error"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
