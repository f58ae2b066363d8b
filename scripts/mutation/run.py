"""Every mutmut mutant of every engine module against the ship-blocking contracts alone, in chunks.

mutmut (configured in pyproject.toml's ``[tool.mutmut]``) mutates ``engine/`` (all of it but the
planted-fault registry) and, per mutant, runs the ship-blocking falsifiers that reach the mutated
function; the unit tests never run, so a kill is the contracts' own.  The full run is ~12,000
mutants at a few seconds each on the 2-core reference machine: many hours, so it runs in chunks.

Each invocation runs the mutants that have no current result for up to ``--minutes`` (then stops
mutmut as Ctrl-C would; what finished is kept), copies every verdict into the committed
``mutation/results.jsonl`` (see ``scripts/mutation/cache.py`` for what invalidates one) and
prints the kill ratio per module over everything decided so far, raw and with the mutants reviewed
as equivalent (``mutation/equivalent.txt``) left out, and the survivors by module and
function.  Interrupted or killed, the next invocation picks up the finished part first.

    python scripts/mutation/run.py                           # the next hour of the full run
    python scripts/mutation/run.py --minutes 0               # no time limit: until every mutant is decided
    python scripts/mutation/run.py --module engine/lora.py   # only this module's pending mutants
    python scripts/mutation/run.py --report                  # the figures so far; runs nothing
    python scripts/mutation/run.py --forget-kills-by qa-gates-v1::FALSIFY-QAG-004   # a falsifier found flaky
    python scripts/mutation/run.py --judge-again engine.qa.x_perplexity__mutmut_36   # one verdict doubted
    nox -s mutation -- --minutes 120
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SITE = HERE / "mutmut_site"
DATA = ROOT / "mutation"
sys.path[:0] = [str(ROOT), str(HERE), str(SITE)]

import cache  # noqa: E402
import equivalents  # noqa: E402
import pv_private_cache  # noqa: E402
import stopping  # noqa: E402

from pv.mutation import read_equivalent  # noqa: E402

MUTANTS = ROOT / "mutants"
CHUNK = MUTANTS / "pv-chunk.json"
LOG = MUTANTS / "pv-mutation-log.jsonl"
RESULTS = DATA / "results.jsonl"
KILLERS = DATA / "killers.json"
HINTS = MUTANTS / "pv-mutation-hints.json"
SURVIVALS = DATA / "survivals.json"
SKIPS = MUTANTS / "pv-mutation-skips.json"
SEED_CACHE = MUTANTS / "pv-engine-cache"  # filled by mutmut's clean run; each mutant's run copies it
EQUIVALENT = DATA / "equivalent.txt"
EQUIVALENT_LOCK = DATA / "equivalent-diffs.json"


def generate() -> None:
    """mutmut's own generation step (what ``mutmut run`` does first), without running anything."""
    # optional: mutmut exists only with the [mutation] extra
    from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths

    MUTANTS.mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(os.cpu_count() or 2)
    # mutmut regenerates a module only when its source is newer than the mutated copy, so a copy
    # cut short (a generation killed halfway) would stay broken for good: remove and redo those.
    broken = [p for p in sorted((MUTANTS / "engine").rglob("*.py")) if not _compiles(p)]
    for path in broken:
        print(f"regenerating {path.relative_to(MUTANTS)}: the mutated copy does not compile", flush=True)
        path.unlink()
        path.with_name(path.name + ".meta").unlink(missing_ok=True)
    if broken:
        create_mutants(os.cpu_count() or 2)


def _compiles(path: Path) -> bool:
    source = path.read_bytes()
    if not source.strip() and path.name != "__init__.py":
        return False
    try:
        compile(source, str(path), "exec")
    except SyntaxError:
        return False
    return True


def collect(records: dict[str, cache.Record]) -> int:
    """Fold the last chunk's finished verdicts into ``records``; how many there were."""
    chunk = cache.Chunk.load(CHUNK)
    if chunk is None:
        return 0
    found = cache.harvest(MUTANTS, chunk)
    records.update((r.mutant, r) for r in found)
    return len(found)


# mutmut's own stats step (what ``mutmut run`` does before running mutants), alone: a full
# collection without stats, else only the tests it has no stats for.  mutmut first drops the
# test lists of every module whose function hashes the process has not seen, and it learns them
# while generating mutants, which this process does not do: without them a partial collection
# kept only what the re-collected falsifiers reach (26 of 111 left engine/bricks.py with 991
# mutants "reached by no falsifier"), so the hashes of every generated module are given first.
STATS_CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, "scripts/mutation")
import cache
from mutmut.__main__ import collect_or_load_stats, setup_source_paths
from mutmut.state import state
from mutmut.workers.isolation import get_mutant_runner
setup_source_paths()
state().current_function_hashes.update(cache.function_hashes(Path("mutants")))
collect_or_load_stats(get_mutant_runner(1))
"""


def refresh_stats(suite: cache.SuiteDigests) -> dict[str, set[str]]:
    """mutmut's coverage stats, current for ``suite``: the falsifiers whose checker, contract or
    shared fixtures changed since their stats were collected are collected again."""
    stale = cache.stale_stats(MUTANTS, suite)
    if stale or not (MUTANTS / cache.STATS).is_file():
        print(f"collecting which functions {len(stale)} new or changed falsifiers reach", flush=True)
        cache.drop_stats(MUTANTS, stale)
        subprocess.run([sys.executable, "-c", STATS_CHILD], cwd=ROOT, env=mutmut_env(), check=True)
        cache.mark_stats_current(MUTANTS, suite)
    return cache.read_reach(MUTANTS)


def mutmut_env() -> dict[str, str]:
    """mutmut's environment.  One thread per run: torch's thread pool does not survive mutmut's
    fork server, and two single-threaded runs use the two cores better than one two-threaded run.
    Child processes a falsifier starts report the engine functions they call during the stats run
    (``scripts/mutation/mutmut_site/sitecustomize.py``), so mutmut runs that falsifier for their mutants."""
    hits = MUTANTS / "pv-child-hits"
    hits.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(p for p in (str(SITE), os.environ.get("PYTHONPATH", "")) if p)
    # Each mutant's run imports the mutated engine and the falsifiers afresh: without bytecode
    # written under mutants/ (PYTHONDONTWRITEBYTECODE) every run compiled them again, ~2 CPU-s of a
    # ~5 s run.  The bytecode is checked against each source's mtime, so a regenerated module is
    # compiled again.
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONPATH": path,
        "PV_MUTMUT_CHILD_HITS": str(hits),
        # A mutant of the tokenizer can write a wrong tokenizer into the cache it reads from.  The
        # run keeps its own cache, emptied before each chunk, so none reaches the user's; mutmut's
        # clean run fills it, and each mutant's run works in a copy of it (pv_private_cache), so
        # none reaches the next mutant either.
        "PV_ENGINE_CACHE": str(SEED_CACHE),
        "PV_MUTMUT_CACHE_SEED": str(SEED_CACHE),
        "PYTEST_PLUGINS": ",".join(p for p in (os.environ.get("PYTEST_PLUGINS", ""), "pv_private_cache") if p),
    }


def current(
    records: dict[str, cache.Record],
    generated: dict[str, tuple[str, str]],
    suite: cache.SuiteDigests,
    reach: dict[str, set[str]],
) -> dict[str, cache.Record]:
    """The records that still hold: same function source, and the falsifiers their verdict rests on.

    A verdict kept under the whole suite's digest, and current, is restated as the falsifiers that
    reach its function now (the stats are current for this very suite), so that it outlives the
    next unrelated contract."""
    kept: dict[str, cache.Record] = {}
    for name, r in records.items():
        r = cache.migrate(r, suite)
        if name not in generated or generated[name][1] != r.function_digest or not suite.current(r, reach):
            continue
        if r.suite_digest is not None and (reached := suite.reached_by(reach.get(r.key, ()))) is not None:
            r = replace(r, suite_digest=None, reached_by=reached)
        kept[name] = r
    return kept


# mutmut's own command line, in a process that first imports the libraries the falsifiers import
# inside their functions (transformers, PEFT, bitsandbytes, gguf: ~3.5 CPU-s).  mutmut forks its
# fork server from this process, and each mutant's run from the server, so every run inherits them
# instead of importing them again.  Nothing of engine/ is imported here: mutmut points the path at
# its mutated copy later.
PRELOAD = ("torch", "safetensors", "tokenizers", "gguf", "transformers", "peft", "bitsandbytes")
MUTMUT_MAIN = f"""
import importlib, sys
for name in {PRELOAD!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # a falsifier that needs it reports that itself
import transformers.models.llama.modeling_llama, transformers.models.qwen2.modeling_qwen2
from mutmut.__main__ import cli
sys.argv[0] = "mutmut"
sys.exit(cli())
"""


def run_chunk(names: list[str], minutes: float, max_children: int, suite: cache.SuiteDigests) -> int:
    cache.block_stray_none(MUTANTS)
    for folder in (SEED_CACHE, pv_private_cache.copies_folder(SEED_CACHE)):
        shutil.rmtree(folder, ignore_errors=True)
    cache.forget(MUTANTS, names)
    cache.Chunk(names, suite).save(CHUNK)
    hinted = cache.write_hints(HINTS, names, cache.read_killers(KILLERS), suite)
    print(f"{hinted} of them run their earlier killers first", flush=True)
    if LOG.exists():  # a crash under this chunk must not inherit an older run's verdicts
        LOG.replace(LOG.with_suffix(".previous.jsonl"))
    argv = [sys.executable, "-c", MUTMUT_MAIN, "run", "--max-children", str(max_children), *names]
    return stopping.run_for(argv, minutes, mutmut_env())


def report(generated: dict[str, tuple[str, str]], records: dict[str, cache.Record], modules: list[str]) -> int:
    total = Counter(module for module, _ in generated.values() if not modules or module in modules)
    done = Counter(r.module for r in records.values() if not modules or r.module in modules)
    print(f"\ndecided {sum(done.values())} of {sum(total.values())} mutants")
    for module in sorted(total):
        if done[module] < total[module]:
            print(f"  {module:<30} {done[module]:>5} of {total[module]:>5}")
    command = ["pv", "mutation", "report", "--results", str(RESULTS), "--survivors", "0", "--by-function"]
    if EQUIVALENT.is_file():
        command += ["--equivalent", str(current_equivalents())]
    return subprocess.run(command, cwd=ROOT).returncode


def current_equivalents() -> Path:
    """The reviewed equivalent mutants that still name the mutant reviewed (scripts/mutation/equivalents.py),
    as a file for ``pv mutation report``; the stale ones are listed and left out."""
    out = MUTANTS / "pv-equivalent-current.txt"
    current = equivalents.held(EQUIVALENT, EQUIVALENT_LOCK)
    out.write_text("".join(f"{n}  # {why}\n" for n, why in current.items()), encoding="utf-8")
    return out


def lock_equivalents() -> int:
    """Record the change of every reviewed equivalent that has none recorded (a new review)."""
    return equivalents.lock(EQUIVALENT, EQUIVALENT_LOCK)


def restate(revision: str | None = None) -> int:
    """Restate every verdict kept under an earlier digest scheme in the current scheme, where the
    earlier digest holds for the checkers as they are in the repository now, or as they were at
    ``revision`` (a commit the verdicts were kept at); runs nothing and needs no mutmut.

    Run it before a change that keeps what the checkers run but breaks an earlier scheme (checkers
    moved into other files or packages), or after one with the commit before it: the digests are
    then restated from the code the verdicts were judged with, and the next run compares them with
    the code as it is."""
    if revision is not None:
        with tempfile.TemporaryDirectory(prefix="pv-restate-") as tmp:
            tree = Path(tmp) / "tree"
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), revision], cwd=ROOT, check=True)
            try:
                suite = cache.SuiteDigests.measure(tree)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    else:
        suite = cache.SuiteDigests.measure(ROOT)
    records = cache.read(RESULTS)
    restated = {name: cache.migrate(r, suite) for name, r in records.items()}
    changed = sum(1 for name, r in restated.items() if r != records[name])
    unchanged = sum(1 for r in restated.values() if r.suite_digest is None and suite.current(r) and r.killer_digests)
    cache.write(RESULTS, restated)
    survivals = cache.read_survivals(SURVIVALS)
    moved = {name: cache.restate_survival(s, suite) for name, s in survivals.items()}
    cache.write_lists(SURVIVALS, {k: asdict(v) for k, v in moved.items()})
    print(
        f"restated {changed} of {len(records)} verdicts in the current digest scheme "
        f"({unchanged} kills current for the checkers {'at ' + revision if revision else 'as they are'}); "
        f"{sum(1 for k in moved if moved[k] != survivals[k])} of {len(survivals)} survivals"
    )
    return 0


_main_pid: int | None = None


def _interrupt(signum: int, frame: object) -> None:
    if os.getpid() != _main_pid:
        # A process forked from this one (mutmut's generation pool, which ends its workers with
        # SIGTERM) ends as the signal's default would: a KeyboardInterrupt there only printed a
        # traceback per worker into the chunk's log.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt


def install_interrupt() -> None:
    """Ctrl-C and `kill` stop the chunk and keep what finished, also when started in the background
    (a non-interactive shell starts background jobs with SIGINT ignored)."""
    global _main_pid
    _main_pid = os.getpid()
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def main() -> int:
    install_interrupt()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60, help="stop after this long (0: no limit)")
    parser.add_argument("--module", action="append", default=[], help="only these modules (engine/x.py)")
    parser.add_argument("--report", action="store_true", help="print the figures so far and run nothing")
    parser.add_argument(
        "--lock-equivalents",
        action="store_true",
        help="record the change of each newly reviewed equivalent (mutation/equivalent-diffs.json) and exit",
    )
    parser.add_argument(
        "--restate",
        action="store_true",
        help="restate the kept verdicts in the current digest scheme, where an earlier one still holds "
        "for the repository's checkers, and exit (before moving checkers to other files)",
    )
    parser.add_argument(
        "--restate-from",
        metavar="REV",
        help="the same, for the checkers as they were at the commit REV the verdicts were kept at",
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--equivalents-later",
        action="store_true",
        help="leave the reviewed equivalents out of this chunk: each runs every falsifier that reaches "
        "it, while a killable mutant stops at its first killer, so the rest is decided sooner",
    )
    parser.add_argument(
        "--forget-kills-by",
        action="append",
        default=[],
        metavar="CONTRACT::FALSIFY-ID",
        help="drop the kills these falsifiers alone made, so that they are judged again (a falsifier "
        "found to fail under a mutant it does not tell apart, or one that was flaky when it killed)",
    )
    parser.add_argument(
        "--judge-again",
        action="append",
        default=[],
        metavar="MUTANT",
        help="drop this mutant's verdict, so that the next chunk judges it again (a kill or a timeout "
        "that its falsifiers do not repeat when run by hand)",
    )
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.restate or args.restate_from:
        return restate(args.restate_from)
    records = cache.read(RESULTS)
    if args.judge_again:
        try:
            records = cache.without_verdicts(records, args.judge_again)
        except KeyError as exc:
            parser.error(str(exc.args[0]))
        cache.write(RESULTS, records)
        print(f"dropped the verdicts of {len(args.judge_again)} mutants: the next chunk judges them again", flush=True)
    if args.forget_kills_by:
        doubted = set(args.forget_kills_by)
        dropped = [n for n, r in records.items() if r.killers and set(r.killers) <= doubted]
        records = cache.without_verdicts(records, dropped)
        cache.write(RESULTS, records)
        print(f"forgot {len(dropped)} kills made by {', '.join(sorted(doubted))} alone", flush=True)
    collected = collect(records)
    generate()
    generated = cache.current_function_digests(MUTANTS)
    suite = cache.SuiteDigests.measure(MUTANTS)
    if args.lock_equivalents:
        return lock_equivalents()
    if args.report:
        # runs nothing: the stats as last collected judge what is current, and the file is left as
        # it is (stats stale for a changed falsifier must not drop a line for good)
        stale = cache.stale_stats(MUTANTS, suite)
        if stale:
            print(f"{len(stale)} falsifiers changed since mutmut's stats: the next chunk re-judges them")
        return report(generated, current(records, generated, suite, cache.read_reach(MUTANTS)), args.module)
    reach = refresh_stats(suite)
    cache.remember_killers(KILLERS, records.values())  # before the verdicts that no longer hold go
    survivals = cache.remember_survivals(SURVIVALS, records.values())
    records = current(records, generated, suite, reach)
    cache.write(RESULTS, records)
    if collected:
        print(f"kept {collected} verdicts of the last chunk")
    todo = [
        name
        for name, (module, _) in sorted(generated.items())
        if name not in records and (not args.module or module in args.module)
    ]
    if args.equivalents_later and EQUIVALENT.is_file():
        todo, later = cache.equivalents_later(todo, read_equivalent(EQUIVALENT))
        print(f"{len(later)} reviewed equivalents without a current verdict are left for a later chunk")
    if not todo:
        return report(generated, records, args.module)
    print(f"{len(todo)} mutants without a current verdict; running for up to {args.minutes:g} minutes")
    skipped = cache.write_skips(SKIPS, todo, survivals, generated, suite, reach)
    print(f"{skipped} of them survived before and run only the falsifiers new or changed since", flush=True)
    start = time.perf_counter()
    code = run_chunk(todo, args.minutes, args.max_children, suite)
    collected = collect(records)
    cache.remember_killers(KILLERS, records.values())
    cache.remember_survivals(SURVIVALS, records.values())
    reach = cache.read_reach(MUTANTS)  # what mutmut ran with (it may have collected new stats)
    cache.write(RESULTS, current(records, generated, suite, reach))
    elapsed = time.perf_counter() - start
    print(f"\nmutmut exit {code}: {collected} verdicts in {elapsed / 60:.1f} min")
    # docs/engine-outputs.md shows, per engine function, what the contracts killed of it
    subprocess.run([sys.executable, str(ROOT / "scripts" / "engine_outputs.py")], cwd=ROOT, check=False)
    # docs/mutation-results.md: the figures of everything kept
    subprocess.run([sys.executable, str(HERE / "figures.py")], cwd=ROOT, check=False)
    return report(generated, current(records, generated, suite, reach), args.module)


if __name__ == "__main__":
    sys.exit(main())
