"""How fast is ``pv validate`` on a large tree?

Generates N realistic contracts (about 10 KB each, 4 falsifiers each, obligations, equations,
Kani harnesses, changelog, depends_on edges) in a temporary folder and times ``pv validate`` over
them, in-process and through the console script.  Prints contracts per second.

    python bench/validate_speed.py            # 1,000 contracts, best of 3
    python bench/validate_speed.py -n 200 --repeat 5
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
from synthetic import FULL, Shape, bench_parser, write_tree

from pv.noise import cpu_seconds
from pv.validate import validate_paths

TARGET_S = 1.0  # the target for 1,000 contracts on the 2-core reference machine (editor speed)

# About 10 KB per contract: the size the recorded figures were measured at.
SHAPE = Shape(
    stem="bench-contract",
    obligations=5,
    detail=FULL,
    size=10_270,
    params="{{d_model: {d_model}, n_layers: 2, rank: 8, seed: {k}, sweep: [1, 2, 4, 8]}}",
    expect="0 < rel_diff <= 0.05 * {k} and isfinite(max_abs) and step0_loss <= 0.7 * ln(vocab_size)",
)


def time_in_process(folder: Path, repeat: int) -> tuple[list[float], list[float], str]:
    times = []
    cpu = []  # CPU seconds: on a shared machine wall time also measures the neighbours
    summary = ""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu_seconds()
        report = validate_paths([folder], checker_packages=["falsifiers"], fault_packages=["engine"])
        times.append(time.perf_counter() - t0)
        cpu.append(cpu_seconds() - c0)
        summary = report.summary()
        if report.errors:
            raise SystemExit(f"generated contracts do not validate: {report.errors[0].format()}")
    return times, cpu, summary


def time_cli(folder: Path, repeat: int) -> list[float]:
    exe = shutil.which("pv")
    cmd = [exe] if exe else [sys.executable, "-m", "pv.cli"]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        env = {**os.environ, "PV_CHECKER_PACKAGES": "falsifiers", "PV_FAULT_PACKAGES": "engine"}
        proc = subprocess.run([*cmd, "validate", str(folder)], capture_output=True, text=True, check=False, env=env)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"pv validate exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return times


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--no-cli", action="store_true", help="skip the console-script timing")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat = 20, 1

    with tempfile.TemporaryDirectory(prefix="pv-bench-") as tmp:
        folder = Path(tmp) / "contracts"
        # configured as a project is (its fault package named): a tree of invalid contracts would
        # time the error path, where every falsifier's position is looked up
        size = write_tree(Path(tmp), SHAPE, args.n, config="pv")
        print(f"generated {args.n} contracts, {size / args.n / 1024:.1f} KB each on average, in {folder}")
        times, cpu, summary = time_in_process(folder, args.repeat)
        best = min(times)
        print(f"in-process: {summary}")
        print(
            f"in-process: best {best:.3f} s, median {statistics.median(times):.3f} s over {args.repeat} runs "
            f"-> {args.n / best:,.0f} contracts/s (CPU time: best {min(cpu):.3f} s)"
        )
        if not args.no_cli:
            cli = time_cli(folder, args.repeat)
            print(
                f"cli (pv validate): best {min(cli):.3f} s, median {statistics.median(cli):.3f} s "
                f"-> {args.n / min(cli):,.0f} contracts/s (includes interpreter start-up)"
            )
        scaled = best * 1000 / args.n
        verdict = "meets" if scaled <= TARGET_S else "misses"
        print(f"target: 1,000 contracts in {TARGET_S:.1f} s; this run {verdict} it ({scaled:.2f} s per 1,000)")
        print(f"cpu count: {os.cpu_count()}")
        figure(f"{args.n} contracts validated in {best:.3f} s in-process ({scaled:.2f} s per 1,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
