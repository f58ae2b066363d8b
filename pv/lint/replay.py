"""A ``pv lint`` whose every input is unchanged prints the report the last full run printed, before
typer, pydantic or any gate is imported.

A full run stores what it printed in ``.pv/lint-replay.json`` under a key of everything lint reads:
its options, the working folder, the settings and the ``PV_*`` environment, the interpreter and its
import path, pv's own code, every file of the project (git's tracked and untracked files, or every
file under the root outside git) and every file under a folder a setting names (contracts,
evidence, trusted keys, checker, fault and code packages), and git's HEAD, refs and index.  A file
counts by its size, mtime, ctime and inode: the key is made of ``stat`` calls, no file is read.

A run stores its report only when a full run with the same inputs would print the same text: the
ratchet did not move (no finding new, none gone since the previous run), every contract came from
lint's own cache (``.pv/lint-cache.json``; a run that read YAML says so in its validate line), no
input changed while it ran, and none changed within :data:`RACY_S` before the key was taken (a file rewritten within the
same clock tick keeps its mtime: git's "racily clean" entries).  ``--output``, ``--baseline``,
``--write-baseline``, ``--no-state`` and ``--explain`` always run in full.  A replay prints the
stored bytes; in the text format its first line says it is a replay and of when.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pv
from pv.config import ConfigError, PvConfig, ensure_importable, load_config
from pv.git import GitError, run_git
from pv.lint.state import dumps, read_json, write_if_changed

REPLAY_FILE = "lint-replay.json"
REPLAY_FORMAT = 1
RACY_S_DEFAULT = 1.0
RACY_S = RACY_S_DEFAULT  # a file changed this recently may change again unseen within one mtime tick
# Folders no lint reads: caches, virtual environments' contents (found by their pyvenv.cfg), git's objects.
SKIPPED_DIRS = frozenset(
    {".git", ".pv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", ".nox", ".tox"}
)
ENV_NAMES = ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "PYTHONPATH", "GITHUB_ACTIONS", "GITHUB_WORKSPACE")
VALUE_OPTIONS = {"--format": "format", "-f": "format", "--checker-package": "checker_package"}
VALUE_OPTIONS |= {"--evidence": "evidence", "--base": "base"}
FLAG_OPTIONS = {"--strict": "strict", "--strict-test-binding": "strict_test_binding", "--pr": "pr"}


@dataclass(frozen=True)
class LintArgs:
    """The options that shape a lint report, as the command parsed them: the replay's key is made of these."""

    contracts: str | None = None
    format: str = "text"
    strict: bool = False
    strict_test_binding: bool = False
    checker_package: tuple[str, ...] = ()
    evidence: str | None = None
    base: str = "HEAD"
    pr: bool = False

    def config(self) -> PvConfig:
        contracts = Path(self.contracts) if self.contracts is not None else None
        return load_config(
            contracts,
            contracts=contracts,
            checker_packages=list(self.checker_package) or None,
            evidence=self.evidence,
        )


def parse(argv: Sequence[str]) -> LintArgs | None:
    """``pv lint``'s arguments as :class:`LintArgs`, or None for any the replay leaves to the full
    command (an option that writes a file or skips the state, ``--help``, anything unrecognised)."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    packages: list[str] = []
    positional: list[str] = []
    items = list(argv)
    while items:
        token = items.pop(0)
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in FLAG_OPTIONS and not eq:
            flags.add(FLAG_OPTIONS[name])
        elif name in VALUE_OPTIONS:
            if not eq:
                if not items:
                    return None
                inline = items.pop(0)
            if VALUE_OPTIONS[name] == "checker_package":
                packages.append(inline)
            else:
                values[VALUE_OPTIONS[name]] = inline
        elif token.startswith("-") or positional:
            return None
        else:
            positional.append(token)
    return LintArgs(
        contracts=str(Path(positional[0])) if positional else None,
        format=values.get("format", "text"),
        strict="strict" in flags,
        strict_test_binding="strict_test_binding" in flags,
        checker_package=tuple(packages),
        evidence=str(Path(values["evidence"])) if "evidence" in values else None,
        base=values.get("base", "HEAD"),
        pr="pr" in flags,
    )


# --- the inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """The key of one moment's inputs (for ``args``), and whether any of them changed too recently to trust."""

    args: LintArgs
    key: str
    racy: bool


def _walk(top: Path) -> Iterator[Path]:
    if top.is_file():
        yield top
        return
    for folder, dirs, files in os.walk(top):
        if "pyvenv.cfg" in files:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            yield Path(folder, name)


def _git_dirs(root: Path) -> list[Path]:
    """The repository's folder and, for a worktree, the one it shares refs with (none outside git)."""
    try:
        out = run_git(root, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    except GitError:
        return []
    return list(dict.fromkeys((root / line).resolve() for line in out.splitlines() if line))


def _git_state(git_dirs: Iterable[Path]) -> Iterator[Path]:
    """HEAD, the index and every ref, of the worktree and of the repository it shares refs with."""
    for d in git_dirs:
        yield from (d / "HEAD", d / "index", d / "packed-refs")
        if (d / "refs").is_dir():
            yield from _walk(d / "refs")


def _project_files(root: Path, in_git: bool) -> Iterator[Path]:
    """git's tracked and untracked (not ignored) files; outside git, every file under the root."""
    if in_git:
        try:
            out = run_git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", binary=True)
        except GitError:
            out = None
        if out is not None:
            names = sorted(set(out.decode("utf-8", "surrogateescape").split("\0")))
            # a repository that does not ignore them still never has lint read its caches
            yield from (root / n for n in names if n and not SKIPPED_DIRS.intersection(n.split("/")[:-1]))
            return
    yield from _walk(root)


def _package_dirs(names: Iterable[str]) -> Iterator[Path]:
    """Where each named package's top-level module lives, found without importing it."""
    for name in sorted(set(names)):
        top = name.partition(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            yield Path(f"<no package {top}>")
        elif spec.submodule_search_locations:
            yield from (Path(p) for p in spec.submodule_search_locations)
        elif spec.origin:
            yield Path(spec.origin)


def inputs(
    args: LintArgs, config: PvConfig, *, cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> Inputs:
    """The key of everything ``pv lint`` with ``args`` reads now (see the module's text)."""
    env = os.environ if environ is None else environ
    ensure_importable(config.root)  # the full run imports the checker packages from the root
    h = hashlib.sha256()
    head = {
        "format": REPLAY_FORMAT,
        "args": asdict(args),
        "cwd": str(cwd or Path.cwd()),
        "config": repr(config),
        "env": {k: v for k, v in sorted(env.items()) if k.startswith("PV_") or k in ENV_NAMES},
        "python": [sys.executable, sys.version, sys.path],
        "pv": pv.__version__,
    }
    h.update(json.dumps(head, sort_keys=True, default=str).encode())
    now = time.time_ns()
    seen: set[str] = set()
    newest = 0

    def add(paths: Iterable[Path]) -> None:
        nonlocal newest
        for path in paths:
            text = str(path)
            if text in seen:
                continue
            seen.add(text)
            try:
                st = os.stat(path)
                line = f"{text}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n"
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            except OSError:
                line = f"{text}\0-\n"
            h.update(line.encode("utf-8", "surrogateescape"))

    git_dirs = _git_dirs(config.root)
    add(_project_files(config.root, bool(git_dirs)))
    add(_git_state(git_dirs))
    named = [*config.contract_dirs, config.contracts, config.evidence]
    named += [p for p in (config.trusted_keys, config.pyproject) if p is not None]
    for top in named:
        add(_walk(top) if top.exists() else [top])
    for top in _package_dirs([*config.checker_packages, *config.fault_packages, *config.code_packages]):
        add(_walk(top) if top.exists() else [top])
    add(_walk(Path(pv.__file__).parent))
    # a folder on the import path changes when a package is installed (the root's own files are listed above)
    add(Path(p) for p in sys.path if p and Path(p) != config.root)
    return Inputs(args, h.hexdigest(), racy=newest >= now - int(RACY_S * 1e9))


# --- storing and replaying -----------------------------------------------------------------------


def store(config: PvConfig, before: Inputs, text: str, exit_code: int, *, steady: bool) -> bool:
    """Keep ``text`` for the next run with the same inputs; True if kept.  ``before`` is the key taken
    before the run: a run whose inputs moved while it ran (or just before) is not kept."""
    path = config.state_dir / REPLAY_FILE
    if not steady or before.racy:
        path.unlink(missing_ok=True)
        return False
    if inputs(before.args, config).key != before.key:
        path.unlink(missing_ok=True)
        return False
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    doc = {"format": REPLAY_FORMAT, "key": before.key, "exit_code": exit_code, "stored": stamp, "text": text}
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return write_if_changed(path, dumps(doc))


def replay(argv: Sequence[str]) -> int | None:
    """Print the stored report and return its exit code when nothing ``pv lint argv`` reads has
    changed; None when the full command must run."""
    args = parse(argv)
    if args is None:
        return None
    try:
        config = args.config()
    except ConfigError:
        return None  # the full command says what is wrong
    doc = read_json(config.state_dir / REPLAY_FILE)
    if not isinstance(doc, dict) or doc.get("format") != REPLAY_FORMAT:
        return None
    text, code = doc.get("text"), doc.get("exit_code")
    if not isinstance(text, str) or not isinstance(code, int):
        return None
    now = inputs(args, config)
    if now.racy or now.key != doc.get("key"):
        return None
    if args.format == "text":
        first, nl, rest = text.partition("\n")
        text = f"{first}  [replayed: nothing lint reads has changed since {doc.get('stored')}]{nl}{rest}"
    sys.stdout.write(text)
    sys.stdout.flush()
    return code
