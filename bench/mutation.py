"""How many of mutmut's mutants of the engine does the ship-blocking contract suite alone kill?

mutmut (configured in pyproject.toml's ``[tool.mutmut]``) mutates the engine's modules; for each
mutant it runs only the ship-blocking falsifiers that reach the mutated function.  pv's plugin logs
which falsifier failed under which mutant, and ``pv mutation report`` prints the kill ratio per
module against mutants reviewed as equivalent (``bench/mutation_equivalent.txt``).

The full run is about 3,900 mutants at ~4 s each on the 2-core reference machine (hours), so the
default is a seeded sample per module; ``--sample 0`` runs every mutant.  Not a CI gate.

    python bench/mutation.py                       # 30 mutants per module, seed 0
    python bench/mutation.py --sample 0            # everything (hours)
    python bench/mutation.py --module engine/lora.py --sample 50
    nox -s mutation -- --sample 60 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
SAMPLE_FILE = MUTANTS / "pv-sample.txt"
EQUIVALENT = ROOT / "bench" / "mutation_equivalent.txt"


def generate() -> None:
    """mutmut's own generation step (what ``mutmut run`` does first), without running anything."""
    from mutmut.__main__ import (
        copy_also_copy_files,
        copy_src_dir,
        create_mutants,
        setup_source_paths,
    )

    MUTANTS.mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(os.cpu_count() or 2)


def mutant_names() -> dict[str, list[str]]:
    by_module: dict[str, list[str]] = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        module = meta.relative_to(MUTANTS).as_posix().removesuffix(".meta")
        by_module[module] = sorted(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return by_module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=30, help="mutants per module (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--module", action="append", default=[], help="only these modules (engine/x.py)")
    parser.add_argument("--fresh", action="store_true", help="delete mutants/ first (results of earlier runs)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.fresh and MUTANTS.exists():
        shutil.rmtree(MUTANTS)
    generate()
    by_module = {m: names for m, names in mutant_names().items() if not args.module or m in args.module}
    if not by_module:
        print(f"no mutants for {args.module or 'any module'}", file=sys.stderr)
        return 2
    chosen: list[str] = []
    for module, names in by_module.items():
        rng = random.Random(f"{args.seed}:{module}")  # per module: --module alone draws the same sample
        picked = names if args.sample <= 0 or args.sample >= len(names) else rng.sample(names, args.sample)
        print(f"{module}: {len(picked)} of {len(names)} mutants")
        chosen.extend(sorted(picked))
    SAMPLE_FILE.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    # One thread per mutant run: torch's thread pool does not survive mutmut's fork server, and
    # two single-threaded runs use the two cores better than one two-threaded run.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.perf_counter()
    run = subprocess.run(["mutmut", "run", "--max-children", str(args.max_children), *chosen], env=env)
    elapsed = time.perf_counter() - start
    per = elapsed / len(chosen)
    print(f"\nmutmut: {len(chosen)} mutants in {elapsed:.0f} s ({per:.1f} s per mutant), exit {run.returncode}")
    report = ["pv", "mutation", "report", "--only", str(SAMPLE_FILE), "--survivors", "200"]
    if EQUIVALENT.is_file():
        report += ["--equivalent", str(EQUIVALENT)]
    return subprocess.run(report).returncode or run.returncode


if __name__ == "__main__":
    sys.exit(main())
