"""Do verdicts change when the machine is busy?  The contracts on clean code, quiet and under load.

Runs the selected falsifiers once on a quiet machine, then ``--runs`` times while a CPU burner
keeps every core busy (one spinning process per core, each stopping by itself after
``--burn-s``; the script also stops them when a run ends), and compares every falsifier's verdict
with the quiet run's.  A ``falsified`` (or ``error``) under load that was ``survived`` when quiet
is a false verdict caused by the neighbours: the target is none.  ``inconclusive`` under load is
what pv.noise is for, and is counted apart.

    python bench/load_verdicts.py                       # contracts -m ship_blocking, 5 loaded runs
    python bench/load_verdicts.py --select contracts    # every falsifier, advisory timings included
    python bench/load_verdicts.py --runs 2 --select contracts/bench-stability-v1.yaml

Verdicts are read from the junit XML pytest writes (pv puts each falsifier's verdict there as the
``pv_verdict`` property).  No evidence is written.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
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


def burn(deadline: float) -> None:
    """Spin until ``deadline`` (time.monotonic): a bounded load that ends by itself."""
    x = 0
    while time.monotonic() < deadline:
        x += 1


class Burner:
    """One spinning process per core for at most ``seconds``; stopped early on exit."""

    def __init__(self, cores: int, seconds: float) -> None:
        self.cores, self.seconds = cores, seconds
        self.procs: list[multiprocessing.Process] = []

    def __enter__(self) -> Burner:
        deadline = time.monotonic() + self.seconds
        ctx = multiprocessing.get_context("spawn")
        self.procs = [ctx.Process(target=burn, args=(deadline,), daemon=True) for _ in range(self.cores)]
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


def run_suite(select: list[str], workers: str, mutants: bool, junit: Path) -> tuple[dict[str, str], float]:
    cmd = [sys.executable, "-m", "pytest", *select, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += ["--pv-no-evidence", f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    if workers != "0":
        cmd += ["-n", workers]
    if mutants:
        cmd.append("--pv-mutants")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
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
    add_smoke(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.workers, args.burn_s = 1, "0", 120.0
        args.select = "contracts/qlora-memory-v1.yaml -k QMEM-003"
    select = shlex.split(args.select)
    with tempfile.TemporaryDirectory(prefix="pv-load-") as tmp:
        print(f"quiet run: pytest {args.select}", flush=True)
        quiet, quiet_s = run_suite(select, args.workers, args.mutants, Path(tmp) / "quiet.xml")
        rows: list[Counter[str]] = []
        for k in range(args.runs):
            print(
                f"loaded run {k + 1}/{args.runs}: {args.cores} burner process(es) on {os.cpu_count()} cores", flush=True
            )
            with Burner(args.cores, args.burn_s):
                loaded, _ = run_suite(select, args.workers, args.mutants, Path(tmp) / f"loaded{k}.xml")
            c: Counter[str] = Counter()
            for node, want in quiet.items():
                got = loaded.get(node, "missing")
                if got == want:
                    c["same"] += 1
                    continue
                c["differ"] += 1
                if want == "survived" and got in ("falsified", "error"):
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
        f"{args.runs} loaded runs x {len(quiet)} falsifiers: {total['false_falsified']} false falsified, "
        f"{total['false_error']} false errors, {total['differ']} differ ({total['inconclusive']} inconclusive)"
    )
    return 1 if total["false_falsified"] or total["false_error"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
