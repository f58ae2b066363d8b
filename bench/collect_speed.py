"""How fast does the pytest plugin collect a large contract tree?

Generates N contracts with 4 falsifiers each (obligations, params, expect, requires, mutant,
changelog: the shape of a real contract) in a temporary project and times
``pytest --collect-only -q`` over it in a fresh subprocess, so interpreter start-up, plugin
loading and collection are all counted, as a user would see them.  Checkers are never imported
during collection, so none need exist here.

    python bench/collect_speed.py             # 1,000 contracts x 4 falsifiers, best of 3
    python bench/collect_speed.py -n 200 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _figure import add_smoke, figure
from synthetic import LEAN, Shape, write_tree

TARGET_S = 3.0  # for 1,000 contracts / 4,000 falsifiers on this machine (issue 69)
FALSIFIERS_PER_CONTRACT = 4


SHAPE = Shape(
    stem="bench-collect",
    prefix="C",
    falsifiers=FALSIFIERS_PER_CONTRACT,
    detail=LEAN,
    size=2_767,
    expect="0 < rel_logit_diff <= 0.05 * {k}",
    requires=("cpu", "cpu", "cpu", "cuda"),
    mutant="engine.faults:lora_before_nf4",
)


def collect_once(root: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    items = sum(1 for line in proc.stdout.splitlines() if "::FALSIFY-" in line)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"pytest --collect-only failed with exit code {proc.returncode}")
    return elapsed, items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--contracts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    add_smoke(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.contracts, args.repeat = 10, 1
    with tempfile.TemporaryDirectory(prefix="pv-collect-bench-") as tmp:
        root = Path(tmp)
        write_tree(root, SHAPE, args.contracts, config="pytest")
        expected = args.contracts * FALSIFIERS_PER_CONTRACT
        times = []
        for _ in range(args.repeat):
            elapsed, items = collect_once(root)
            if items != expected:
                raise SystemExit(f"collected {items} falsifiers, expected {expected}")
            times.append(elapsed)
    best = min(times)
    print(
        f"collect: {args.contracts} contracts, {expected} falsifiers: best {best:.2f} s, "
        f"median {statistics.median(times):.2f} s over {args.repeat} runs "
        f"({expected / best:,.0f} falsifiers/s); target {TARGET_S:.1f} s for 1,000 contracts"
    )
    if args.contracts == 1000:
        print("within target" if best <= TARGET_S else f"OVER TARGET by {best - TARGET_S:.2f} s")
    figure(f"{expected} falsifiers collected in {best:.2f} s ({expected / best:,.0f} falsifiers/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
