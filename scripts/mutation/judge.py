"""pv's judging core under mutation, with pv's own tests as the killer: the judge tested as the engine is.

The engine's campaign (``run.py``) mutates ``engine/`` and runs the contracts; this one mutates the
code every status rests on (:data:`CORE`: how a bundle is written, read, verified, chained and
judged, how ``expect`` is evaluated, how noise becomes a verdict, how promote, the status gate and
the review decide) and runs pv's own tests (:data:`KILLERS`).  mutmut reads its settings from the
``pyproject.toml`` of the folder it runs in, so the run has a workspace of its own,
``mutants-judge/`` (ignored by git): the repository's top-level entries linked in, and a
``pyproject.toml`` whose ``[tool.mutmut]`` is this run's.

    python scripts/mutation/judge.py --minutes 30     # the next 30 minutes of the run
    python scripts/mutation/judge.py --minutes 30 --only pv/bundle/digest.py   # that module's first
    python scripts/mutation/judge.py --report          # kill ratio per module so far; runs nothing
    python scripts/mutation/judge.py --recover         # record what a chunk killed from outside decided

The workspace goes with the machine; the verdicts do not: each chunk ends by writing every decided
mutant to ``mutation/judge-results.jsonl`` (committed), with what its verdict rested on, and the
next chunk (on this machine or a fresh clone) gives mutmut back every verdict that still holds
(:func:`holds`) before it runs the rest.  The figures per module and the survivors are written to
``mutation/judge-results.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import cache  # noqa: E402
import equivalents  # noqa: E402
import stopping  # noqa: E402
from judge_records import FileDigests, Record, holds, key_of, read_records, test_files, write_records  # noqa: E402

from pv.mutation import (  # noqa: E402
    CHILD_HITS_ENV,
    MutantOutcome,
    read_equivalent,
    summarize,
)

WORKSPACE = ROOT / "mutants-judge"
RECORDS = ROOT / "mutation" / "judge-results.jsonl"
RESULTS = ROOT / "mutation" / "judge-results.json"
# Reviewed equivalent mutants (`name  # why`), each held to the change it was reviewed as (the lock).
EQUIVALENT = ROOT / "mutation" / "judge-equivalent.txt"
EQUIVALENT_LOCK = ROOT / "mutation" / "judge-equivalent-diffs.json"
# What decides a verdict.  The review's renderers (review/html.py: the SVG plots, review/mte.py: the
# mutation-testing-elements JSON) draw compare's rows and decide nothing; they are checked by
# tests/scripts/test_review_flow.py (a screenshot, a schema), which is not a killer here.
CORE = (
    "pv/evidence/",
    "pv/bundle/",
    "pv/review/runs.py",
    "pv/review/changed.py",
    "pv/review/bounds.py",
    "pv/review/compare.py",
    "pv/review/cells.py",
    "pv/review/sections.py",
    "pv/review/markdown.py",
    "pv/review/github.py",
    "pv/promote.py",
    "pv/expr.py",
    "pv/noise.py",
    "pv/run_checker.py",
    "pv/outcomes.py",
    "pv/lint/gates/status.py",
)
KILLERS = ("tests/pv", "tests/security")
# Tests whose checkers run in ranks torchrun starts: each rank imports pv from the mutated copy
# (the rank's path is the test's), where mutmut's trampolines find no settings; they run in the
# ordinary suite, not here.
NOT_KILLERS = ("tests/pv/test_launch.py",)
NOT_LINKED = {".git", "mutants", "mutants-judge", "pyproject.toml", "__pycache__", ".pv", ".pytest_cache"}
# mutmut's own steps before it runs mutants, alone: generating the mutated copies, then its stats
# (which tests call which function; a full collection the first time or after a change of this
# run's settings, else only the tests it has none for).  mutmut drops the stats of every module
# whose function hashes the process has not seen, so they are given first.
GENERATE_CHILD = """
import os
from pathlib import Path
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
Path("mutants").mkdir(exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(os.cpu_count() or 2)
"""
# Nothing of pv may be imported before mutmut puts the mutated copy first on the path: the forked
# test processes would inherit the unmutated modules and reach no mutant.
STATS_CHILD = """
import json
from pathlib import Path
from mutmut.__main__ import collect_or_load_stats, setup_source_paths
from mutmut.state import state
from mutmut.workers.isolation import get_mutant_runner
setup_source_paths()
for meta in sorted(Path("mutants").rglob("*.py.meta")):
    module = meta.relative_to("mutants").as_posix().removesuffix(".py.meta").replace("/", ".")
    hashes = json.loads(meta.read_text(encoding="utf-8")).get("hash_by_function_name", {})
    state().current_function_hashes.update({f"{module}.{name}": digest for name, digest in hashes.items()})
collect_or_load_stats(get_mutant_runner(1), apply_config_invalidation=True)
"""
# mutmut's own command line, with its fork server running each mutant's tests fastest first (its
# fork runner does; the fork server passes them in set order): a kill by a 0.1 s test no longer
# waits for the 6 s ones.
MUTMUT_MAIN = """
import sys
from mutmut.__main__ import cli
from mutmut.state import state
from mutmut.workers.isolation import ForkServerRunner
submit = ForkServerRunner.submit
def fastest_first(self, mutant_name, tests, cpu_time_limit, estimated_time):
    durations = state().duration_by_test
    return submit(self, mutant_name, sorted(tests, key=lambda t: durations.get(t, 0.0)), cpu_time_limit, estimated_time)
ForkServerRunner.submit = fastest_first
sys.argv[0] = "mutmut"
sys.exit(cli())
"""
# test file -> digest, and function -> mutmut's digest, as they were when the tests' stats were collected
STATS_FILES = "judge-stats-files.json"
# How the stats are collected; stats collected another way are collected again for every test
# (2: with the functions a forked checker reaches, pv.mutation.record_child_hits; 3: with the
# functions' digests beside the test files', so that a changed function's callers are collected again).
STATS_VERSION = 3


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
        # what the tests read besides pv: their fixtures, the repository's engine and contracts
        'also_copy = ["tests/", "conftest.py", "engine/", "falsifiers/", "contracts/", "recipes/", "scripts/"]',
        "pytest_add_cli_args = "
        + json.dumps(
            ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-q"]
            + [f"--ignore={p}" for p in NOT_KILLERS]
        ),
        "pytest_add_cli_args_test_selection = " + json.dumps(list(KILLERS)),
        'process_isolation = "forkserver"',
        "timeout_constant = 10.0",
        # a mutant that hangs pv's loops waits out (its tests' measured time + 10 s) x this; mutmut's
        # 15 left one hanging mutant of verify.py, whose tests take ~90 s, running 25 minutes
        "timeout_multiplier = 4.0",
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
    wanted = text[:start] + settings() + "\n" + text[end:]
    target = WORKSPACE / "pyproject.toml"
    if not target.is_file() or target.read_text(encoding="utf-8") != wanted:
        target.write_text(wanted, encoding="utf-8")  # rewritten only when changed: mutmut watches it


# --- mutmut's state in the workspace -----------------------------------------------------------


def _metas(mutants: Path) -> list[Path]:
    """mutmut's meta files of the modules in :data:`CORE` (one left from an earlier core is not read)."""
    return [m for m in sorted(mutants.rglob("*.py.meta")) if m.relative_to(mutants).as_posix().startswith(CORE)]


def _read_meta(meta: Path) -> dict[str, Any]:
    """A meta file, read again while a running mutmut is halfway through rewriting it."""
    for attempt in range(20):
        try:
            data: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8"))
            return data
        except json.JSONDecodeError:
            if attempt == 19:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def generated(mutants: Path) -> dict[str, tuple[str, str | None, int | None]]:
    """mutant -> (module, its function's digest now, mutmut's exit code), for every generated mutant."""
    out: dict[str, tuple[str, str | None, int | None]] = {}
    for meta in _metas(mutants):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = _read_meta(meta)
        hashes: dict[str, str] = data.get("hash_by_function_name", {})
        for name, code in data["exit_code_by_key"].items():
            function = key_of(name).rpartition(".")[2]
            out[name] = (module, hashes.get(function), code)
    return out


def give_back(mutants: Path, verdicts: Mapping[str, int]) -> int:
    """Write ``verdicts`` (mutant -> exit code) into mutmut's meta files, so its run skips them; every
    other verdict there is cleared (it rests on nothing this run recorded)."""
    given = 0
    for meta in _metas(mutants):
        data = _read_meta(meta)
        codes: dict[str, int | None] = data["exit_code_by_key"]
        new = {name: verdicts.get(name) for name in codes}
        given += sum(code is not None for code in new.values())
        if new != codes:
            data["exit_code_by_key"] = new
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return given


def drop_deleted_tests(mutants: Path, root: Path) -> list[str]:
    """Remove the workspace's copies of test files the repository no longer has; their paths.
    mutmut copies ``tests/`` in but never deletes a copy, so without this a verdict would go on
    resting on a test that is gone (its copy's digest unchanged) and mutmut would still run it."""
    copies = mutants / "tests"
    gone: list[str] = []
    for copy in sorted(copies.rglob("*")) if copies.is_dir() else ():
        rel = copy.relative_to(mutants).as_posix()
        if "__pycache__" not in copy.parts and not copy.is_dir() and not (root / rel).exists():
            copy.unlink()
            gone.append(rel)
    return gone


def stale_test_nodes(mutants: Path, digests: FileDigests) -> list[str]:
    """Tests in mutmut's stats whose file (or a conftest above it) changed since their stats were
    collected (mutmut collects stats for new tests only, and an edited test may reach other
    functions), or that reached a function whose source changed since (it may call others now: a
    helper split out of it is otherwise reached by no test); every test when the stats were
    collected another way (:data:`STATS_VERSION`)."""
    path = mutants / STATS_FILES
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    stats = mutants / "mutmut-stats.json"
    if doc.get("version") != STATS_VERSION and stats.is_file():
        return sorted(json.loads(stats.read_text(encoding="utf-8")).get("duration_by_test", {}))
    then: dict[str, str] = doc.get("files", {})
    reach = cache.read_reach(mutants)
    nodes = {node for tests in reach.values() for node in tests}
    stale = {n for n in nodes if any(then.get(f) != digests(f) for f in test_files(n, digests.root))}
    before: dict[str, str] = doc.get("functions", {})
    changed = (name for name, digest in cache.function_digests(mutants).items() if before.get(name) != digest)
    return sorted(stale.union(*(reach.get(name, ()) for name in changed)))


def collect_stats(mutants: Path, env: dict[str, str]) -> dict[str, set[str]]:
    digests = FileDigests(mutants)
    stale = stale_test_nodes(mutants, digests)
    if stale:
        print(f"{len(stale)} tests changed since their stats were collected: collecting them again", flush=True)
        cache.drop_stats(mutants, stale)
    subprocess.run([sys.executable, "-c", STATS_CHILD], cwd=WORKSPACE, env=env, check=True)
    reach = cache.read_reach(mutants)
    files = {f for tests in reach.values() for node in tests for f in test_files(node, mutants)}
    doc = {
        "version": STATS_VERSION,
        "files": {f: digests(f) for f in sorted(files)},
        "functions": cache.function_digests(mutants),
    }
    (mutants / STATS_FILES).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return reach


def harvest(mutants: Path, records: dict[str, Record], reach: Mapping[str, set[str]]) -> int:
    """Fold every verdict mutmut holds that is not recorded yet into ``records``; how many."""
    digests = FileDigests(mutants)
    new = 0
    for name, (module, digest, code) in generated(mutants).items():
        if code is None or digest is None or name in records:
            continue
        tests = digests.of_tests(reach.get(key_of(name), ()), helpers=True)
        records[name] = Record(name, module, digest, code, tests, helpers=True)
        new += 1
    return new


# --- a chunk -------------------------------------------------------------------------------------


def environment() -> dict[str, str]:
    # A test that starts pytest or `pv` in a child process runs the unmutated pv there: mutmut's
    # trampolines in a child read their settings from the child's folder (a pytester tmp dir),
    # which has none.  What such tests check in-process still reaches the mutants.
    # A checker run with `isolation: process` is forked: the functions it calls are left in this
    # folder for the test that ran it (pv.mutation.record_child_hits), so they are not "no tests".
    hits = WORKSPACE / "mutants" / "pv-child-hits"
    hits.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", CHILD_HITS_ENV: str(hits)}


# What a mutant run costs besides its tests (a fork, pytest's start, collection), in seconds.
OVERHEAD_S = 1.0
# Verdicts mutmut reaches without running a test, or that a stop cannot fake: a test failed.  A
# chunk stopped early keeps only these of what it decided: a worker stopped mid-run comes back as
# "survived" (exit code 0, no test run).
TRUSTED_WHEN_STOPPED = frozenset({1, 33})


def todo(
    mutants: Path, reach: Mapping[str, set[str]], minutes: float, children: int, only: tuple[str, ...] = ()
) -> list[str]:
    """The undecided mutants a chunk of ``minutes`` can finish, cheapest first (as mutmut orders
    them), by their tests' recorded durations if every one survived; ``only``: of the modules under
    these paths (``pv/bundle/digest.py``, ``pv/evidence/``), where a module's figure is wanted first."""
    stats = json.loads((mutants / "mutmut-stats.json").read_text(encoding="utf-8"))
    durations: dict[str, float] = stats.get("duration_by_test", {})
    cost = {
        name: OVERHEAD_S + sum(durations.get(t, 0.0) for t in reach.get(key_of(name), ()))
        for name, (module, _, code) in generated(mutants).items()
        if code is None and (not only or module.startswith(only))
    }
    budget = minutes * 60 * children if minutes > 0 else math.inf
    chosen: list[str] = []
    for name in sorted(cost, key=lambda n: (cost[n], n)):
        budget -= cost[name]
        if budget < 0 and chosen:
            break
        chosen.append(name)
    return chosen


def _holding(mutants: Path, reach: Mapping[str, set[str]]) -> tuple[dict[str, Record], int]:
    """The records that still hold against mutmut's workspace now, and how many mutants it has."""
    now = generated(mutants)
    digests = FileDigests(mutants)
    records = read_records(RECORDS)
    return {n: r for n, r in records.items() if n in now and holds(r, now[n][1], reach, digests)}, len(now)


def _drop_deleted_tests(mutants: Path) -> None:
    gone = drop_deleted_tests(mutants, ROOT)
    if gone:
        print(f"{len(gone)} test files are gone from the repository: the verdicts that rested on them run again")


def recover() -> None:
    """Fold into the records what mutmut decided in a chunk that ended without recording it (its
    process killed from outside: a restarted shell, a lost machine).  Only a kill of the whole
    process group comes here: a chunk stopped by SIGTERM records what it can trust itself."""
    mutants = WORKSPACE / "mutants"
    _drop_deleted_tests(mutants)
    reach = cache.read_reach(mutants)
    kept, total = _holding(mutants, reach)
    found = harvest(mutants, kept, reach)
    write_records(RECORDS, kept)
    print(f"{found} verdicts recovered; {len(kept)} of {total} decided in all", flush=True)


def chunk(minutes: float, children: int, only: tuple[str, ...] = ()) -> None:
    """Give mutmut back what still holds, run the undecided mutants that fit in ``minutes`` (0: all)
    of the modules under ``only`` (all: empty), record what it decided."""
    mutants = WORKSPACE / "mutants"
    env = environment()
    subprocess.run([sys.executable, "-c", GENERATE_CHILD], cwd=WORKSPACE, env=env, check=True)
    _drop_deleted_tests(mutants)
    reach = collect_stats(mutants, env)
    kept, total = _holding(mutants, reach)
    given = give_back(mutants, {n: r.exit_code for n, r in kept.items()})
    print(f"{given} of {total} mutants decided already", flush=True)
    names = todo(mutants, reach, minutes, children, only)
    if not names:
        write_records(RECORDS, kept)
        return
    print(f"running {len(names)} of the {total - len(kept)} undecided ones", flush=True)
    argv = [sys.executable, "-c", MUTMUT_MAIN, "run", "--max-children", str(children), *names]
    # the estimate is the worst case (every mutant survives); the limit is only a safety net
    _, stopped = stopping.run(argv, 2 * minutes + 10 if minutes > 0 else 0, env, cwd=WORKSPACE)
    if stopped:
        after = {n: code for n, (_, _, code) in generated(mutants).items()}
        dropped = {n for n in names if after.get(n) not in (None, *TRUSTED_WHEN_STOPPED)}
        print(f"stopped early: {len(dropped)} verdicts other than a kill are run again next time", flush=True)
        give_back(mutants, {n: c for n, c in after.items() if c is not None and n not in dropped})
    found = harvest(mutants, kept, cache.read_reach(mutants))
    write_records(RECORDS, kept)
    print(f"{found} mutants decided in this chunk; {len(kept)} of {total} decided in all", flush=True)


def _changes(names: Iterable[str]) -> dict[str, equivalents.Change | None]:
    """mutmut's removed and added lines of each mutant, read in the workspace (mutmut finds its
    mutants relative to the folder it runs in)."""
    here = Path.cwd()
    os.chdir(WORKSPACE)
    try:
        return equivalents.current_changes(names)
    finally:
        os.chdir(here)


def current_equivalents() -> dict[str, str]:
    """The reviewed equivalents that still name the mutant reviewed; stale ones are listed and left out."""
    if not EQUIVALENT.is_file():
        return {}
    if not (WORKSPACE / "mutants").is_dir():
        return read_equivalent(EQUIVALENT)  # nothing generated here to hold them to: as reviewed
    return equivalents.held(EQUIVALENT, EQUIVALENT_LOCK, _changes)


def lock_equivalents() -> int:
    """Record the change of every reviewed equivalent that has none recorded (a new review)."""
    return equivalents.lock(EQUIVALENT, EQUIVALENT_LOCK, _changes)


def report(generated_now: Mapping[str, tuple[str, str | None, int | None]] | None = None) -> dict[str, object]:
    """The figures per module over what is decided, written to :data:`RESULTS` and printed."""
    records = {n: r for n, r in read_records(RECORDS).items() if r.module.startswith(CORE)}
    outcomes = [MutantOutcome(r.mutant, r.module, r.status) for r in records.values()]
    if generated_now:
        outcomes += [MutantOutcome(n, m, "not checked") for n, (m, _, _) in generated_now.items() if n not in records]
    data = summarize(outcomes, {}, current_equivalents()).to_json()
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{'module':<32} {'killed':>6} / {'tested':<6} {'raw':>7} {'ratio':>7} {'equivalent':>10} {'to run':>7}")
    for module in [*data["modules"], data["total"]]:
        raw, ratio = (f"{v:.1%}" if isinstance(v, float) else "—" for v in (module["raw_ratio"], module["ratio"]))
        left = module["by_status"].get("not checked", 0)
        counted = module["tested"] + module["equivalent"]
        print(
            f"{module['module']:<32} {module['killed']:>6} / {counted:<6} {raw:>7} {ratio:>7} "
            f"{module['equivalent']:>10} {left:>7}"
        )
    return data


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long this chunk runs (0: until done)")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 2, help="mutants run at once")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATH",
        help="run only the mutants of modules under PATH (pv/bundle/digest.py, pv/evidence/); repeatable",
    )
    parser.add_argument("--report", action="store_true", help="print the figures so far; run nothing")
    parser.add_argument(
        "--lock-equivalents", action="store_true", help=f"hold each new entry of {EQUIVALENT.name} to its change"
    )
    parser.add_argument(
        "--recover", action="store_true", help="record what a chunk killed from outside had decided; run nothing"
    )
    args = parser.parse_args(argv)
    # `kill -TERM` stops a chunk as Ctrl-C does (a chunk run in the background ignores SIGINT): the
    # stop is this process's, so only the chunk's kills are kept
    signal.signal(signal.SIGTERM, _interrupt)
    prepare()
    if args.lock_equivalents:
        return lock_equivalents()
    if args.recover:
        recover()
    elif not args.report:
        chunk(args.minutes, args.children, tuple(args.only))
    mutants = WORKSPACE / "mutants"
    report(generated(mutants) if mutants.is_dir() else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
