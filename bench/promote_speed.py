"""How fast is ``pv promote`` on 1,000 contracts that all have verified, current evidence?

Generates a self-contained repository in a temporary folder (``[tool.pv]``, a checker package
whose checkers really run and whose faults really change what they observe, N contracts of the
lint benchmark's shape: four falsifiers each, two of them ship-blocking with a mutant), writes
real evidence for every contract with one ``pytest --pv-evidence --pv-mutants`` run (set-up, timed
and printed but not the figure), then times, on a fresh copy of the tree each time:

``promote``
    ``pv promote``: every contract read, its evidence verified, DRAFT moved to ACTIVE and the
    file rewritten with a changelog entry (the whole path the issue counts parses on);
``check``
    ``pv promote --check`` on the promoted tree: the same reading and verifying, nothing written.

Both are timed through the console entry point, interpreter start-up included, because that is
what a developer waits for.

    python bench/promote_speed.py              # 1,000 contracts, best of 3
    python bench/promote_speed.py -n 200 --repeat 5
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _figure import add_smoke, figure
from synthetic import Shape, bench_parser, write_tree

CHECKERS = '''\
"""Checkers and faults for the promote benchmark: each fault pushes its checker over the bound."""

from pv.checkers import checker
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("promotebench")
for k in range(1, 5):
    FAULTS.register(f"fault_{k}", f"planted defect {k}")


@checker(observes=["rel_diff"])
def measure(k=1, **params):
    return {"rel_diff": 1.0 if FAULTS.active(f"fault_{k}") else 0.01}
'''

SHAPE = Shape(
    stem="bench-promote",
    prefix="P",
    size=3_566,
    check="promotebench_checkers:measure",
    params="{{k: {k}, d_model: {d_model}, seed: {k}}}",
    expect="0 < rel_diff <= 0.05 * {k}",
    mutant="promotebench_checkers:fault_{k}",
)


def pv_command() -> list[str]:
    exe = shutil.which("pv")
    return [exe] if exe else [sys.executable, "-m", "pv.cli"]


def timed(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[-3:])} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def main() -> int:
    parser = bench_parser(__doc__)
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat = 5, 1
    with tempfile.TemporaryDirectory(prefix="pv-promote-bench-") as tmp:
        source = Path(tmp) / "source"
        source.mkdir()
        size = write_tree(
            source, SHAPE, args.n, config="pv", checker_package="promotebench_checkers", checker_module=CHECKERS
        )
        print(f"generated {args.n} contracts, {size / args.n / 1024:.1f} KB each on average, in {source}")
        pytest_cmd = [sys.executable, "-m", "pytest", "contracts", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        pytest_cmd += ["--pv-evidence", "--pv-mutants", "--pv-isolation", "thread"]
        elapsed, out = timed(pytest_cmd, source)
        print(f"evidence written in {elapsed:.1f} s: {out.strip().splitlines()[-1]}")
        promote: list[float] = []
        check: list[float] = []
        for run in range(args.repeat):
            tree = Path(tmp) / f"run{run}"
            shutil.copytree(source, tree)
            elapsed, out = timed([*pv_command(), "promote"], tree)
            promote.append(elapsed)
            promoted = sum(1 for p in (tree / "contracts").glob("*.yaml") if "status: ACTIVE" in p.read_text())
            if promoted != args.n:
                raise SystemExit(f"pv promote moved {promoted} of {args.n} contracts to ACTIVE:\n{out[-3000:]}")
            check.append(timed([*pv_command(), "promote", "--check"], tree)[0])
            shutil.rmtree(tree)
        scale = 1000 / args.n
        for name, times in (("promote", promote), ("promote --check", check)):
            best = min(times)
            print(
                f"{name}: best {best:.3f} s, median {statistics.median(times):.3f} s over {args.repeat} runs "
                f"({best * scale:.2f} s per 1,000 contracts)"
            )
        # the peer measured in the same run: --check reads and verifies the same tree and writes nothing
        print(f"promote / promote --check: {min(promote) / min(check):.2f}x (what editing and writing the files costs)")
        print(f"cpu count: {os.cpu_count()}; timings include interpreter start-up")
        figure(f"{args.n} contracts: promote {min(promote):.3f} s, promote --check {min(check):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
