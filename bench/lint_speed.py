"""How fast is ``pv lint`` on 1,000 contracts, cold and on a re-run with nothing changed?

Generates a self-contained repository in a temporary folder: a ``pyproject.toml`` with
``[tool.pv]``, a small checker package with a fault registry, and N contracts (about 3.5 KB each:
obligations, four falsifiers bound to checkers with ``expect`` predicates and mutants, a Kani
harness, depends_on edges, a changelog).  Every gate has real work and the tree passes them all,
so the timing is of a full run, not of an early exit.

Cold means no ``.pv/`` (no cache, no index, no ratchet).  The second run after it reuses ``.pv/``
instead of parsing YAML and runs every gate again (it sets the ratchet and stores its report);
warm is every run after that with nothing changed, which replays the stored report
(:mod:`pv.lint.replay`) after checking, by ``stat`` alone, that nothing lint reads has changed.
All three are timed through the console entry point (``pv lint``), interpreter start-up included,
because that is what a developer waits for.

    python bench/lint_speed.py              # 1,000 contracts, best of 3 each
    python bench/lint_speed.py -n 200 --repeat 5
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

from pv.lint.replay import RACY_S

COLD_TARGET_S = 1.0  # issue 69: editor speed, interpreter start-up included
WARM_TARGET_S = 0.3

CHECKERS = '''\
"""Checkers and faults for the lint benchmark (never run: lint only resolves them)."""

from pv.checkers import checker
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("lintbench")
for k in range(1, 5):
    FAULTS.register(f"fault_{k}", f"planted defect {k}")


@checker(observes=["rel_diff", "max_abs"])
def measure_1(**params):
    return {"rel_diff": 0.01, "max_abs": 0.1}


@checker(observes=["rel_diff", "max_abs"])
def measure_2(**params):
    return {"rel_diff": 0.01, "max_abs": 0.1}


@checker(observes=["step0_loss", "vocab_size"])
def measure_3(**params):
    return {"step0_loss": 1.0, "vocab_size": 256}


@checker(observes=["tokens_per_s"])
def measure_4(**params):
    return {"tokens_per_s": 100.0}
'''

EXPECT = (
    "0 < rel_diff <= 0.05 and isfinite(max_abs)",
    "rel_diff <= tol * 2 and max_abs < 1",
    "step0_loss <= 0.7 * ln(vocab_size)",
    "tokens_per_s >= min_rate",
)
PARAMS = (
    "{d_model: 64, n_layers: 2, seed: 1}",
    "{d_model: 128, tol: 0.01, seed: 2}",
    "{vocab_size: 256, seed: 3}",
    "{min_rate: 10, seed: 4}",
)
# Falsifier k runs measure_k with PARAMS[k - 1]; its expect names what measure_k observes.
SHAPE = Shape(
    size=3_566,
    check="lintbench_checkers:measure_{k}",
    params=PARAMS,
    expect=EXPECT,
    mutant="lintbench_checkers:fault_{k}",
)


def run_cli(root: Path) -> tuple[float, str]:
    exe = shutil.which("pv")
    cmd = [exe] if exe else [sys.executable, "-m", "pv.cli"]
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, "lint", "contracts"], cwd=root, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"pv lint exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--show", action="store_true", help="print the gate table of the last warm run")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat = 20, 1

    with tempfile.TemporaryDirectory(prefix="pv-lint-bench-") as tmp:
        root = Path(tmp)
        size = write_tree(
            root, SHAPE, args.n, config="pv", checker_package="lintbench_checkers", checker_module=CHECKERS
        )
        print(f"generated {args.n} contracts, {size / args.n / 1024:.1f} KB each on average, in {root}")
        time.sleep(RACY_S)  # a report is stored only once no file is younger than this (pv.lint.replay)
        cold: list[float] = []
        second: list[float] = []
        warm: list[float] = []
        out = ""
        for _ in range(args.repeat):
            shutil.rmtree(root / ".pv", ignore_errors=True)
            cold.append(run_cli(root)[0])
            elapsed, out = run_cli(root)
            second.append(elapsed)
            if f"({args.n} from the .pv/ cache)" not in out:
                raise SystemExit(f"the second run did not reuse .pv/:\n{out}")
            elapsed, out = run_cli(root)
            warm.append(elapsed)
            if "[replayed:" not in out.partition("\n")[0]:
                raise SystemExit(f"the third run did not replay the stored report:\n{out}")
        if args.show:
            print(out)
        scale = 1000 / args.n
        print(
            f"second run (gates again over the .pv/ cache): best {min(second):.3f} s, "
            f"median {statistics.median(second):.3f} s ({min(second) * scale:.2f} s per 1,000)"
        )
        for name, times, target in (("cold", cold, COLD_TARGET_S), ("warm", warm, WARM_TARGET_S)):
            best = min(times)
            verdict = "meets" if best * scale <= target else "misses"
            print(
                f"{name}: best {best:.3f} s, median {statistics.median(times):.3f} s over {args.repeat} runs; "
                f"target {target:.1f} s per 1,000: {verdict} it ({best * scale:.2f} s per 1,000)"
            )
        print(f"cpu count: {os.cpu_count()}; timings include interpreter start-up")
        figure(
            f"{args.n} contracts linted: cold {min(cold):.3f} s, second run {min(second):.3f} s, "
            f"warm (replayed) {min(warm):.3f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
