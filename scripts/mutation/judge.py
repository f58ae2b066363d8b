"""pv's judging core under mutation, with pv's own tests as the killer: the judge tested as the engine is.

The engine's campaign (``run.py``) mutates ``engine/`` and runs the contracts; this one mutates the
code every status rests on (:data:`CORE`: how a bundle is written, read, verified, chained and
judged, how ``expect`` is evaluated, how noise becomes a verdict, how promote, the status gate and
the review decide) and runs ``tests/pv``.  mutmut reads its settings from the ``pyproject.toml`` of
the folder it runs in, so the run has a workspace of its own, ``mutants-judge/`` (ignored by git):
the repository's top-level entries linked in, and a ``pyproject.toml`` whose ``[tool.mutmut]`` is
this run's.  mutmut keeps each mutant's outcome there, so a chunk cut short resumes where it stopped.

    python scripts/mutation/judge.py --minutes 30     # the next 30 minutes of the run
    python scripts/mutation/judge.py --report          # kill ratio per module so far; runs nothing

Each chunk ends by writing the figures per module and every survivor to
``mutation/judge-results.json``, which is committed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import stopping  # noqa: E402

from pv.mutation import read_mutmut, summarize  # noqa: E402

WORKSPACE = ROOT / "mutants-judge"
RESULTS = ROOT / "mutation" / "judge-results.json"
CORE = (
    "pv/evidence/",
    "pv/bundle/",
    "pv/review/",
    "pv/promote.py",
    "pv/expr.py",
    "pv/noise.py",
    "pv/run_checker.py",
    "pv/outcomes.py",
    "pv/lint/gates/status.py",
)
KILLERS = "tests/pv"
# Tests whose checkers run in ranks torchrun starts: each rank imports pv from the mutated copy
# (the rank's path is the test's), where mutmut's trampolines find no settings; they run in the
# ordinary suite, not here.
NOT_KILLERS = ("tests/pv/test_launch.py",)
NOT_LINKED = {".git", "mutants", "mutants-judge", "pyproject.toml", "__pycache__", ".pv", ".pytest_cache"}


def settings() -> str:
    """This run's ``[tool.mutmut]``: every pv module outside :data:`CORE` is left alone."""
    others = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "pv").rglob("*.py")
        if not p.relative_to(ROOT).as_posix().startswith(CORE)
    )
    lines = [
        "[tool.mutmut]",
        'source_paths = ["pv/"]',
        "do_not_mutate = " + json.dumps(others),
        # what tests/pv read besides pv: their fixtures, the repository's engine and contracts
        'also_copy = ["tests/", "conftest.py", "engine/", "falsifiers/", "contracts/", "recipes/", "scripts/"]',
        "pytest_add_cli_args = "
        + json.dumps(
            ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-q"]
            + [f"--ignore={p}" for p in NOT_KILLERS]
        ),
        f'pytest_add_cli_args_test_selection = ["{KILLERS}"]',
        'process_isolation = "forkserver"',
        "timeout_constant = 10.0",
    ]
    return "\n".join(lines) + "\n"


def prepare() -> None:
    """The workspace: links to the repository's entries and a pyproject.toml with this run's settings."""
    WORKSPACE.mkdir(exist_ok=True)
    for entry in ROOT.iterdir():
        link = WORKSPACE / entry.name
        if entry.name in NOT_LINKED or link.exists() or link.is_symlink():
            continue
        link.symlink_to(entry)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("[tool.mutmut]")
    after = re.search(r"^\[", text[start + 1 :], flags=re.MULTILINE)
    end = start + 1 + after.start() if after else len(text)
    (WORKSPACE / "pyproject.toml").write_text(text[:start] + settings() + "\n" + text[end:], encoding="utf-8")


def run(minutes: float) -> int:
    """``mutmut run`` in the workspace for ``minutes`` (0: until done), stopped as Ctrl-C would."""
    # A test that starts pytest or `pv` in a child process runs the unmutated pv there: mutmut's
    # trampolines in a child read their settings from the child's folder (a pytester tmp dir),
    # which has none.  What such tests check in-process still reaches the mutants.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "mutmut", "run", "--max-children", str(os.cpu_count() or 2)]
    return stopping.run_for(argv, minutes, env, cwd=WORKSPACE)


def report() -> dict[str, object]:
    """The figures per module over what is decided, written to :data:`RESULTS` and printed."""
    outcomes = read_mutmut(WORKSPACE / "mutants")
    summary = summarize(outcomes, {}, {})
    data = summary.to_json()
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for module in data["modules"]:
        ratio = module["raw_ratio"]
        shown = f"{ratio:.1%}" if isinstance(ratio, float) else "—"
        print(f"{module['module']:<40} {module['killed']:>5} / {module['tested']:<5} {shown:>7}")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long this chunk runs (0: until done)")
    parser.add_argument("--report", action="store_true", help="print the figures so far; run nothing")
    args = parser.parse_args(argv)
    prepare()
    if not args.report:
        run(args.minutes)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
