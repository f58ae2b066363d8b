"""A blind check: bugs written by someone who never saw the contracts, run against the contracts alone.

    python scripts/blind_check.py DIFFS/                      # every *.diff / *.patch in DIFFS, on HEAD
    python scripts/blind_check.py DIFFS/ --base v0.3 --json out.json
    python scripts/blind_check.py DIFFS/ --select "contracts -m ship_blocking" --workers 2

Each diff is applied (``git apply``) to a clean clone of the repository at ``--base``, then the
contracts run with ``-x`` and nothing else: no unit test, no evidence written.  A diff is
**killed** when a falsifier fails (the first one is named), **survived** when every selected
falsifier passes, **not applied** when git refuses it, and **refused** when it touches the judging
side instead of the system under test: pv itself, the contracts, the checker packages, the
evidence, the tests or a conftest (a bug there is not a bug the contracts should catch).  First the
clean clone runs once: a suite that fails without any diff makes every verdict meaningless, so the
check stops there.

Exit status: 0 when every applied diff was killed, 1 when one survived, 2 for a usage error or a
baseline that fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from pv.config import load_config
from pv.git import GitError, run_git

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SELECT = "contracts -m ship_blocking --ignore-glob=contracts/real-model-*"
JUDGING = ("pv/", "tests/", "evidence/", "mutation/", "scripts/")  # besides contracts and checkers
# a line of pytest's short summary (-rfE): FAILED or ERROR, or pv's own word for it (FALSIFIED…)
_FAILED = re.compile(r"^([A-Z][A-Z_]+) (\S+?::\S+)")
_NOT_FAILURES = {"PASSED", "SKIPPED", "XFAIL", "XPASS"}
_DIFF_PATH = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", re.MULTILINE)


@dataclass
class Outcome:
    diff: str
    verdict: str  # killed | survived | not applied | refused | timed out
    killer: str = ""  # the first falsifier that failed
    detail: str = ""
    seconds: float = 0.0


def judging_paths(clone: Path) -> tuple[str, ...]:
    """The folders and files a blind bug may not touch: pv's own plus the project's contracts,
    checker packages and evidence as its configuration names them."""
    config = load_config(clone)
    named = [config.relpath(d) for d in config.contract_dirs] + [config.relpath(config.evidence)]
    named += [package.replace(".", "/") for package in config.checker_packages]
    return tuple(dict.fromkeys([*JUDGING, *(n.rstrip("/") + "/" for n in named)]))


def touched(diff: str) -> list[str]:
    return sorted({p for p in _DIFF_PATH.findall(diff) if p != "/dev/null"})


def refusal(paths: list[str], judging: tuple[str, ...]) -> str:
    bad = [p for p in paths if p.startswith(judging) or Path(p).name == "conftest.py"]
    return f"touches the judging side: {', '.join(bad)}" if bad else ""


def run_contracts(clone: Path, select: str, workers: int, timeout_s: float) -> tuple[str, str, str]:
    """(verdict, killer, detail) of the selected falsifiers on ``clone`` with ``-x``."""
    argv = [sys.executable, "-m", "pytest", *shlex.split(select), "-x", "-q", "-rfE", "-p", "no:cacheprovider"]
    argv += ["--pv-no-evidence"]
    argv += ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
    env = {**os.environ, "PYTHONPATH": str(clone), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PV_EVIDENCE", None)
    try:
        done = subprocess.run(argv, cwd=clone, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return "timed out", "", f"no verdict within {timeout_s:g} s"
    lines = done.stdout.splitlines()
    failed = [m.group(2) for line in lines if (m := _FAILED.match(line)) and m.group(1) not in _NOT_FAILURES]
    if done.returncode == 0:
        return "survived", "", ""
    nodes = [f for f in failed if ".yaml::" in f or ".yml::" in f]  # pytest's node ids, before pv's own lines
    if failed:
        return "killed", (nodes or failed)[0], ""
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    return "error", "", " / ".join(tail)  # pytest itself failed: no falsifier named


def clone_at(repo: Path, base: str, where: Path) -> Path:
    run_git(where.parent, "clone", "-q", "--shared", "--no-checkout", str(repo), where.name)
    run_git(where, "checkout", "-q", "--detach", base)
    return where


def check(diffs: list[Path], repo: Path, base: str, select: str, workers: int, timeout_s: float) -> list[Outcome]:
    out: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="pv-blind-") as tmp:
        clean = clone_at(repo, base, Path(tmp) / "baseline")
        judging = judging_paths(clean)
        print(f"baseline: {select} on {base} …", flush=True)
        started = time.monotonic()
        verdict, killer, detail = run_contracts(clean, select, workers, timeout_s)
        if verdict != "survived":
            raise SystemExit(f"blind-check: the suite fails without any diff ({verdict} {killer} {detail}); stopping")
        print(f"baseline: every selected falsifier passes ({time.monotonic() - started:.0f} s)", flush=True)
        shutil.rmtree(clean)
        for n, diff in enumerate(diffs, 1):
            text = diff.read_text(encoding="utf-8", errors="replace")
            started = time.monotonic()
            why = refusal(touched(text), judging)
            if why:
                outcome = Outcome(diff.name, "refused", detail=why)
            else:
                clone = clone_at(repo, base, Path(tmp) / f"diff-{n}")
                try:
                    run_git(clone, "apply", "--whitespace=nowarn", str(diff.resolve()))
                except GitError as exc:
                    outcome = Outcome(diff.name, "not applied", detail=str(exc).splitlines()[0])
                else:
                    verdict, killer, detail = run_contracts(clone, select, workers, timeout_s)
                    outcome = Outcome(diff.name, verdict, killer, detail)
                shutil.rmtree(clone, ignore_errors=True)
            outcome.seconds = round(time.monotonic() - started, 1)
            out.append(outcome)
            shown = f" by {outcome.killer}" if outcome.killer else (f": {outcome.detail}" if outcome.detail else "")
            print(f"[{n}/{len(diffs)}] {diff.name}: {outcome.verdict}{shown} ({outcome.seconds:.0f} s)", flush=True)
    return out


def summary(outcomes: list[Outcome]) -> str:
    judged = [o for o in outcomes if o.verdict in ("killed", "survived", "timed out", "error")]
    killed = sum(o.verdict == "killed" for o in judged)
    ratio = f" ({killed / len(judged):.0%})" if judged else ""
    others = len(outcomes) - len(judged)
    return f"{killed} of {len(judged)} diffs killed{ratio}" + (f"; {others} not applied or refused" if others else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("diffs", type=Path, help="a folder of *.diff / *.patch files (or one file)")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    parser.add_argument("--base", default="HEAD", help="the commit each diff is applied to (default HEAD)")
    parser.add_argument("--select", default=DEFAULT_SELECT, help=f"pytest's selection (default: {DEFAULT_SELECT})")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per run (default 1)")
    parser.add_argument("--timeout-min", type=float, default=30.0, help="per diff (default 30)")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    args = parser.parse_args(argv)
    if args.diffs.is_dir():
        diffs = sorted(p for p in args.diffs.iterdir() if p.suffix in (".diff", ".patch"))
    elif args.diffs.is_file():
        diffs = [args.diffs]
    else:
        parser.error(f"{args.diffs} does not exist")
    if not diffs:
        parser.error(f"no *.diff or *.patch file in {args.diffs}")
    try:
        run_git(args.repo, "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}")
    except GitError:
        parser.error(f"--base {args.base} is not a commit of {args.repo}")
    outcomes = check(diffs, args.repo.resolve(), args.base, args.select, args.workers, args.timeout_min * 60)
    print(summary(outcomes))
    for o in outcomes:
        if o.verdict != "killed":
            print(f"  {o.verdict}: {o.diff}" + (f" ({o.detail})" if o.detail else ""))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n", encoding="utf-8")
    return 1 if any(o.verdict in ("survived", "timed out", "error") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
