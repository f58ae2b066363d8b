"""The evidence ledger: one append-only hash chain of bundles per contract.

``<evidence>/<contract>/ledger.jsonl`` holds one JSON line per event, oldest first:

- ``bundle``: a bundle written by pv, named by run id and digest (the sha256 of its
  ``MANIFEST.sha256``, which covers every file of it), with the verdicts it recorded.  The bundle
  itself names its place (``chain.seq``) and the digest of the bundle before it
  (``chain.previous``), inside the files its digests and signature cover;
- ``adopted``: a bundle written before the ledger, taken in by ``pv evidence ledger adopt``;
- ``forgotten``: a bundle lost by accident (a rebase, a bad checkout), acknowledged by
  ``pv evidence forget``: the falsifiers it had decided are pending until they run again;
- ``pruned``: a bundle ``pv evidence gc`` removed (never one whose verdicts back a status).

A line is compact JSON, keys sorted, in UTF-8 as typed; lines break at ``\n`` alone.
Each line carries the sha256 of the line before it, so lines cannot be reordered or edited in
place without breaking the chain, and the file is only ever appended to.  Under git, a removed
line shows: every commit's diff of the file and the working tree against ``HEAD`` are read, and a
line that disappeared is a finding (:func:`history_problems`).  A ledger outside git can be cut
back by whoever can write the folder; with trusted keys, a bundle cannot be forged, but only the
history of the file shows a newest bundle and its line removed together.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import functools
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pv.bundle.model import MANIFEST_FILE, Bundle
from pv.git import GitError, run_git

LEDGER_FILE = "ledger.jsonl"
EntryKind = Literal["bundle", "adopted", "forgotten", "pruned"]
KINDS: tuple[str, ...] = ("bundle", "adopted", "forgotten", "pruned")
REMOVALS = ("forgotten", "pruned")
DECIDED = ("survived", "falsified", "error")


class LedgerError(Exception):
    """A ledger command cannot go on; nothing was written."""


def bundle_digest(bundle_dir: Path) -> str | None:
    """A bundle's digest: the sha256 of its manifest, which lists every other file's; None if it has none."""
    try:
        return hashlib.sha256((bundle_dir / MANIFEST_FILE).read_bytes()).hexdigest()
    except OSError:
        return None


def line_digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def lines_of(text: str) -> list[str]:
    """The lines of a ledger (or of git's output about one) as they were written: broken at ``\\n``
    alone, a ``\\r`` before it dropped (a checkout that turned endings into CRLF).  ``str.splitlines``
    also breaks at U+2028, U+2029 and U+0085, which a line may hold unescaped (a reason is written
    as typed), and would cut it in two."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines[-1] == "":
        lines.pop()  # after the last newline: nothing, not an empty line
    return lines


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Entry:
    seq: int
    kind: str
    run_id: str
    digest: str
    verdicts: dict[str, str] = field(default_factory=dict)  # falsifier id -> verdict, as recorded
    reason: str = ""
    at: str = ""
    prev_line: str | None = None


@dataclass
class Ledger:
    path: Path
    entries: list[Entry] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the file itself: malformed, reordered, edited

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def removed(self) -> dict[str, Entry]:
        """run id -> the ``forgotten`` or ``pruned`` entry that took it out."""
        return {e.run_id: e for e in self.entries if e.kind in REMOVALS}

    def recorded(self) -> dict[str, Entry]:
        """run id -> the ``bundle`` or ``adopted`` entry of each bundle that should be present."""
        gone = self.removed()
        return {e.run_id: e for e in self.entries if e.kind in ("bundle", "adopted") and e.run_id not in gone}

    def last_bundle(self) -> Entry | None:
        return next((e for e in reversed(self.entries) if e.kind in ("bundle", "adopted")), None)

    def previous_bundle(self, seq: int) -> Entry | None:
        return next((e for e in reversed(self.entries) if e.seq < seq and e.kind in ("bundle", "adopted")), None)


def _parse(n: int, line: str, before: str | None, ledger: Ledger) -> Entry | None:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError:
        ledger.problems.append(f"line {n} is not JSON")
        return None
    if not isinstance(raw, dict):
        ledger.problems.append(f"line {n} is not a JSON object")
        return None
    try:
        entry = Entry(
            seq=int(raw["seq"]),
            kind=str(raw["kind"]),
            run_id=str(raw["run_id"]),
            digest=str(raw["digest"]),
            verdicts={str(k): str(v) for k, v in dict(raw.get("verdicts") or {}).items()},
            reason=str(raw.get("reason", "")),
            at=str(raw.get("at", "")),
            prev_line=raw.get("prev_line"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        ledger.problems.append(f"line {n} lacks a field or has a wrong one ({exc})")
        return None
    if entry.kind not in KINDS:
        ledger.problems.append(f"line {n}: unknown kind {entry.kind!r}")
    if entry.seq != n:
        ledger.problems.append(f"line {n} says seq {entry.seq}: lines were removed, added or reordered")
    expected = line_digest(before) if before is not None else None
    if entry.prev_line != expected:
        ledger.problems.append(f"line {n} does not carry the digest of the line before it: the chain was edited")
    return entry


def read(contract_dir: Path) -> Ledger:
    ledger = Ledger(contract_dir / LEDGER_FILE)
    try:
        text = ledger.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ledger
    except (OSError, UnicodeDecodeError) as exc:
        ledger.problems.append(f"unreadable: {exc}")
        return ledger
    if text and not text.endswith("\n"):
        ledger.problems.append("the last line is torn (no newline): a write was interrupted or the file edited")
    before: str | None = None
    for n, line in enumerate(lines_of(text), 1):
        ledger.lines.append(line)
        entry = _parse(n, line, before, ledger)
        if entry is not None:
            ledger.entries.append(entry)
        before = line
    runs = [e.run_id for e in ledger.entries if e.kind in ("bundle", "adopted")]
    for run in sorted({r for r in runs if runs.count(r) > 1}):
        ledger.problems.append(f"bundle {run} is recorded twice")
    recorded = {e.run_id: e for e in ledger.entries if e.kind in ("bundle", "adopted")}
    for e in ledger.entries:
        if e.kind in REMOVALS:
            first = recorded.get(e.run_id)
            if first is None and e.kind == "forgotten":
                continue  # a bundle whose line was lost with it (found in git's history of the file)
            if first is None or first.seq > e.seq:
                ledger.problems.append(f"line {e.seq} removes {e.run_id}, which no earlier line records")
            elif first.digest != e.digest:
                ledger.problems.append(f"line {e.seq} removes {e.run_id} under another digest than it was recorded")
    return ledger


@contextlib.contextmanager
def locked(contract_dir: Path) -> Iterator[Ledger]:
    """The ledger read under an exclusive lock, held while the caller writes and appends."""
    contract_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(contract_dir / LEDGER_FILE, os.O_RDONLY | os.O_CREAT, 0o644)  # the lock is on the ledger itself
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield read(contract_dir)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def append(ledger: Ledger, kind: EntryKind, run_id: str, digest: str, *, force: bool = False, **extra: Any) -> Entry:
    """Append one line (the caller holds :func:`locked`); fsynced before it returns.  A broken
    ledger takes no line but, with ``force``, the trace of a loss (``pv evidence forget``)."""
    if ledger.problems and not force:
        raise LedgerError(f"{ledger.path}: the ledger is broken ({ledger.problems[0]}); nothing appended")
    seq = len(ledger.lines) + 1
    before = ledger.lines[-1] if ledger.lines else None
    record: dict[str, Any] = {
        "seq": seq,
        "kind": kind,
        "run_id": run_id,
        "digest": digest,
        "prev_line": line_digest(before) if before is not None else None,
        "at": _now(),
        **extra,
    }
    line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # not O_CREAT: locked() made the file; one deleted under the lock is not started afresh
    fd = os.open(ledger.path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    ledger.lines.append(line)
    entry = _parse(seq, line, before, ledger)  # the ledger in memory stays what reading the file gives
    assert entry is not None
    ledger.entries.append(entry)
    return entry


def verdicts_of(bundle: Bundle) -> dict[str, str]:
    """The verdicts a ledger line records of a bundle: every falsifier the run selected."""
    return {f.id: f.verdict for f in bundle.falsifiers if f.selected and f.verdict != "not_run"}


# --- checking the ledger against the folder and against git -----------------------------------


@dataclass
class ChainCheck:
    """A contract's ledger against its bundle folders: what blocks, what counts, what is ignored."""

    problems: list[str] = field(default_factory=list)  # each one blocks the contract's status
    recorded: dict[str, Entry] = field(default_factory=dict)  # run id -> entry, bundles that should be present
    unrecorded: list[Path] = field(default_factory=list)  # bundle folders the ledger does not name
    removed: list[Entry] = field(default_factory=list)  # forgotten or pruned: their verdicts are gone


def check(ledger: Ledger, folders: Mapping[str, Path], bundles: Mapping[str, Bundle | None]) -> ChainCheck:
    """``folders``: run id -> bundle folder present now; ``bundles``: run id -> the bundle as it
    verified (None where it did not load)."""
    out = ChainCheck(problems=[f"{ledger.path.name}: {p}" for p in ledger.problems])
    out.recorded = ledger.recorded()
    out.removed = [e for e in ledger.entries if e.kind in REMOVALS]
    for run_id, entry in out.recorded.items():
        folder = folders.get(run_id)
        if folder is None:
            out.problems.append(
                f"bundle {run_id} (ledger line {entry.seq}) is gone: deleted or lost; if it was lost by "
                f"accident, `pv evidence forget {run_id} --reason ...` records that and its falsifiers run again"
            )
            continue
        if bundle_digest(folder) != entry.digest:
            out.problems.append(
                f"bundle {run_id} (ledger line {entry.seq}) was replaced or edited after it was recorded"
            )
            continue
        bundle = bundles.get(run_id)
        if bundle is None:
            continue  # its own problems (tampered, schema) are reported by verify and block already
        link = bundle.chain
        if entry.kind == "adopted":
            if link is not None:
                out.problems.append(f"bundle {run_id} carries a chain link but is recorded as adopted")
            continue
        previous = ledger.previous_bundle(entry.seq)
        want = previous.digest if previous is not None else None
        if link is None or link.seq != entry.seq or link.previous != want:
            out.problems.append(
                f"bundle {run_id} does not name its place in the chain (ledger line {entry.seq}): the chain was "
                "reordered or spliced"
            )
    gone = ledger.removed()
    for run_id, folder in sorted(folders.items()):
        if run_id not in out.recorded and run_id not in gone:
            out.unrecorded.append(folder)
    return out


@functools.lru_cache(maxsize=256)
def _git_log_removals(top: str, head: str, rel: str) -> tuple[tuple[str, str, str], ...]:
    """(commit, run id, the line) for each line a commit's diff of ``rel`` against a parent removes."""
    del head  # part of the cache key: a new commit is a new question
    try:
        text = run_git(Path(top), "log", "--format=%x00%h", "-p", "-m", "--no-color", "-U0", "--", rel)
    except GitError:
        return ()
    found: list[tuple[str, str, str]] = []
    commit = ""
    for line in lines_of(text):
        if line.startswith("\0"):
            commit = line[1:]
        elif line.startswith("-") and not line.startswith("---"):
            found.append((commit, _run_id_of(line[1:]), line[1:]))
    return tuple(found)


def _run_id_of(line: str) -> str:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError:
        return ""
    return str(raw.get("run_id", "")) if isinstance(raw, dict) else ""


@dataclass
class History:
    """What git saw of a ledger file that is no longer in it."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lost: dict[str, str] = field(default_factory=dict)  # run id -> its line, as git last had it


_TOPS: dict[Path, str] = {}


def _git_top(folder: Path) -> str | None:
    """The work tree ``folder`` is in; a found one is kept (a folder does not move between
    repositories), a miss is asked again (the folder may become a repository)."""
    if folder not in _TOPS:
        with contextlib.suppress(GitError):
            _TOPS[folder] = run_git(folder, "rev-parse", "--show-toplevel").strip()
    return _TOPS.get(folder)


@functools.lru_cache(maxsize=64)
def _shallow(top: str, head: str) -> bool:
    del head  # part of the cache key: a fetch can deepen a clone
    with contextlib.suppress(GitError):
        return run_git(Path(top), "rev-parse", "--is-shallow-repository").strip() == "true"
    return False


def history(ledger_path: Path, current: Ledger | None = None) -> History:
    """Lines of ``ledger_path`` that git saw and that are gone, unless a ``forgotten`` line names them.

    Read from every commit's diff of the file against each parent and from the working tree
    against ``HEAD``.  Outside git nothing can be read, and a note says so.  ``current``: the
    ledger as the caller already read it."""
    out = History()
    folder = ledger_path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    top = _git_top(folder.resolve())
    if top is None:
        out.notes.append("not in a git repository: a ledger line removed together with its bundle cannot be seen")
        return out
    try:
        rel = ledger_path.resolve().relative_to(Path(top).resolve()).as_posix()
        head = run_git(Path(top), "rev-parse", "HEAD").strip()
    except (ValueError, GitError):
        return out  # outside the repository, or a repository without commits: nothing recorded yet
    try:
        now = ledger_path.read_text(encoding="utf-8")
    except OSError:
        now = ""
    current = current if current is not None else read(ledger_path.parent)
    forgotten = {e.run_id for e in current.entries if e.kind == "forgotten"}
    present = set(lines_of(now))
    removals = list(_git_log_removals(top, head, rel))
    with contextlib.suppress(GitError):
        committed = run_git(Path(top), "show", f"HEAD:{rel}")
        removals += [("the working tree", _run_id_of(x), x) for x in lines_of(committed) if x not in present]
    for commit, run_id, line in removals:
        if line in present:
            continue  # moved, not lost (the file's own chain says whether that is in order)
        if run_id:
            out.lost.setdefault(run_id, line)
        if run_id in forgotten:
            continue
        where = commit if commit == "the working tree" else f"commit {commit}"
        out.problems.append(
            f"{rel}: {where} removed the line of bundle {run_id or '(unreadable line)'}; if that was an accident, "
            f"`pv evidence forget {run_id or 'RUN_ID'} --reason ...` records it"
        )
    if _shallow(top, head):
        out.notes.append("a shallow clone: only the fetched commits' diffs of the ledger were read (fetch-depth: 0)")
    out.problems = list(dict.fromkeys(out.problems))
    return out
