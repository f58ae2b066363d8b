"""Which status a contract's evidence supports: docs/design.md's ladder, computed, never declared.

The contract's ledger (:mod:`pv.evidence.ledger`) is read first: a bundle it records that is gone,
replaced, out of its place in the chain or does not verify, or a ledger line git saw and that is
gone, **blocks** the contract, whatever it declares; older verdicts are never read in its place.
Evidence counts only from bundles the ledger records that verify (digests, schema, and a trusted
signature when keys are configured), are bound to the contract as it stands and to the code as it
is (:mod:`pv.evidence.code_binding`), and ran with no fault switched on by the environment; only
the falsifiers the contract declares are read, and a declared ship-blocking falsifier with no
such verdict keeps the contract at ``DRAFT``.  Among those, each falsifier's verdict is its
**newest** measured verdict, bundles ordered by the time recorded (and signed) inside them, never
by folder name:

- a run that did not select a falsifier says nothing about it, so a partial run (``-k``, one
  file) never supersedes a fuller one;
- a skip is never evidence: a newer skip does not replace an older measured verdict;
- nor is an ``inconclusive`` verdict (pv.noise: the machine's noise left the bound undecided): it
  never counts as survived, and a newer one does not replace an older decided verdict, so it never
  demotes by itself; with no decided verdict at all the falsifier is pending;
- a survived verdict whose mutant was not run (a run without ``--pv-mutants``) or whose mutant run
  was inconclusive keeps the mutant kill of the newest earlier run that decided it.

From those verdicts: ``ACTIVE`` when every ship-blocking falsifier survived and killed its named
mutant; ``ACTIVE_ALGORITHM_LEVEL`` when those that could run did so and the rest were skipped only
for hardware (CUDA, GPU memory); ``DRAFT`` otherwise.

:func:`status_mismatch` is the one rule ``pv lint``'s status gate and ``pv promote --check``
share: a declared status must be exactly what the evidence supports (``RETIRED`` is left alone).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pv.bundle.digest import declared_falsifiers
from pv.bundle.model import Bundle, FalsifierEntry, parse_time
from pv.bundle.signing import KeyRing
from pv.evidence import ledger
from pv.evidence.code_binding import CodeScope
from pv.evidence.verify import BundleReport, find_bundles, verify_bundle
from pv.model import Status
from pv.project import ProjectContract

RANK: dict[Status, int] = {Status.DRAFT: 0, Status.ACTIVE_ALGORITHM_LEVEL: 1, Status.ACTIVE: 2}
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class HasPath(Protocol):
    """What is needed of ``pv.loader.LoadedContract``."""

    @property
    def path(self) -> Path: ...


@dataclass
class Source:
    """The verdict that counts for one falsifier, and the bundle it came from."""

    entry: FalsifierEntry
    bundle_path: Path
    run_id: str
    mutant_from: Path | None = None  # when the mutant kill came from an earlier bundle


@dataclass
class Assessment:
    status: Status
    bundle_path: Path | None  # the newest bundle that contributed a verdict
    bundle: Bundle | None = None
    reasons: list[str] = field(default_factory=list)  # why not higher
    falsified: list[str] = field(default_factory=list)  # ship-blocking ids whose verdict is falsified
    rejected: list[BundleReport] = field(default_factory=list)  # bundles that did not count
    ignored: dict[Path, str] = field(default_factory=dict)  # intact and current, but not evidence: why
    sources: dict[str, Source] = field(default_factory=dict)  # falsifier id -> its counting verdict
    counted: list[BundleReport] = field(default_factory=list)  # verified, current bundles, newest first
    blocked: list[str] = field(default_factory=list)  # why the evidence cannot be read: the status is blocked

    @property
    def entries(self) -> list[FalsifierEntry]:
        """Every falsifier's counting entry, in the contract's order."""
        return [s.entry for s in self.sources.values()]

    @property
    def contributing(self) -> list[Path]:
        return sorted(
            {s.bundle_path for s in self.sources.values()}
            | {s.mutant_from for s in self.sources.values() if s.mutant_from}
        )


def bundle_time(bundle: Bundle) -> tuple[_dt.datetime, _dt.datetime, str]:
    """The order of runs: the times inside the bundle (covered by its digests and signature)."""
    started = parse_time(bundle.started_at) or _EPOCH
    finished = parse_time(bundle.finished_at) or started
    return started, finished, bundle.run_id


def _measured(entry: FalsifierEntry | None) -> bool:
    return entry is not None and entry.selected and entry.verdict != "not_run"


UNDECIDED = ("skipped", "inconclusive")  # ran, but decided nothing: never replaces a decided verdict


def _mutant_decided(entry: FalsifierEntry) -> bool:
    return entry.mutant.verdict is not None and entry.mutant.verdict != "inconclusive"


def _mutant_pending(entry: FalsifierEntry) -> bool:
    return entry.verdict == "survived" and bool(entry.mutant.declared) and not _mutant_decided(entry)


def _entries_of(newest_first: list[BundleReport], fid: str) -> list[tuple[BundleReport, Bundle, FalsifierEntry]]:
    out = []
    for r in newest_first:
        entry = r.bundle.falsifier(fid) if r.bundle is not None else None
        if r.bundle is not None and entry is not None:
            out.append((r, r.bundle, entry))
    return out


def pick_sources(newest_first: list[BundleReport]) -> dict[str, Source]:
    """Each falsifier's counting verdict over verified, current bundles given newest first."""
    order: list[str] = []
    for r in newest_first:
        if r.bundle is not None:
            order += [f.id for f in r.bundle.falsifiers if f.id not in order]
    sources: dict[str, Source] = {}
    for fid in order:
        every = _entries_of(newest_first, fid)
        ran = [t for t in every if _measured(t[2])]
        measured = [t for t in ran if t[2].verdict not in UNDECIDED]
        # the newest decided verdict; else the newest skip or inconclusive; else the newest not_run
        report, bundle, entry = (measured or ran or every)[0]
        source = Source(entry, report.path, bundle.run_id)
        if _mutant_pending(entry):
            earlier = next((t for t in measured[1:] if t[2].verdict == "survived" and _mutant_decided(t[2])), None)
            if earlier is not None:
                merged = entry.model_copy(update={"mutant": earlier[2].mutant})
                source = Source(merged, report.path, bundle.run_id, mutant_from=earlier[0].path)
        sources[fid] = source
    return sources


def status_from_entries(entries: list[FalsifierEntry]) -> tuple[Status, list[str], list[str]]:
    """(status, reasons it is not higher, falsified ship-blocking ids)."""
    ship = [f for f in entries if f.ship_blocking]
    if not ship:
        return Status.DRAFT, ["no ship-blocking falsifier"], []
    passed = hardware = 0
    reasons: list[str] = []
    falsified: list[str] = []
    for f in ship:
        if f.verdict == "survived":
            if f.mutant.declared and f.mutant.killed is not True:
                why = "not run" if f.mutant.verdict is None else f"survived it ({f.mutant.verdict})"
                reasons.append(f"{f.id}: mutant {f.mutant.declared} {why}")
            else:
                passed += 1
        elif f.verdict == "skipped" and f.skip_kind == "hardware":
            hardware += 1
            reasons.append(f"{f.id}: skipped ({f.skip_reason})")
        else:
            if f.verdict == "falsified":
                falsified.append(f.id)
            detail = f" ({f.skip_reason})" if f.skip_reason else (f": {f.message.splitlines()[0]}" if f.message else "")
            reasons.append(f"{f.id}: {f.verdict}{detail}")
    if passed + hardware < len(ship):
        return Status.DRAFT, reasons, falsified
    if passed == 0:
        return Status.DRAFT, [*reasons, "no ship-blocking falsifier ran"], falsified
    if hardware:
        return Status.ACTIVE_ALGORITHM_LEVEL, reasons, falsified
    return Status.ACTIVE, reasons, falsified


def _not_evidence(bundle: Bundle) -> str | None:
    if bundle.settings is not None and bundle.settings.faults_env:
        return "faults switched on for the whole run by PV_FAULTS: " + ", ".join(bundle.settings.faults_env)
    return None


_INTEGRITY = frozenset({"tampered", "missing", "incomplete", "schema_error"})  # a recorded bundle with one blocks


def _gone_newer(sources: dict[str, Source], removed: list[ledger.Entry]) -> dict[str, str]:
    """Falsifiers whose newest decided verdict was in a bundle that is gone (forgotten or pruned),
    each with the reason to show."""
    out: dict[str, str] = {}
    for fid, source in sources.items():
        for entry in removed:
            verdict = entry.verdicts.get(fid)
            if verdict in ledger.DECIDED and entry.run_id > source.run_id:
                why = f"forgotten: {entry.reason}" if entry.kind == "forgotten" else entry.kind
                out[fid] = (
                    f"{fid}: its newest verdict ({verdict}) was in bundle {entry.run_id}, which is gone ({why}); "
                    "run it again"
                )
                break
    return out


def assess(
    evidence_dir: Path,
    contract_path: Path,
    contract_id: str | None = None,
    root: Path | None = None,
    *,
    keys: KeyRing | None = None,
    current: ProjectContract | None = None,
    scope: CodeScope | None = None,
) -> Assessment:
    """What a contract's evidence supports: the one reading promote, status, lint and report share.

    The contract's ledger is read first: a bundle it records that is gone, replaced or out of its
    place, a line removed (the file's git history), or a recorded bundle that does not verify
    (tampered, missing files, incomplete, schema) **blocks** the contract (``blocked``), never a
    fall-back to older verdicts.  Bundles the ledger does not record never count."""
    current = current or ProjectContract.read(contract_path)
    cid = contract_id or current.id
    scope = scope or CodeScope.governing(root or contract_path.parent)
    contract_dir = evidence_dir / cid
    rejected: list[BundleReport] = []
    ignored: dict[Path, str] = {}
    counted: list[BundleReport] = []
    paths = find_bundles(contract_dir) if contract_dir.is_dir() else []
    reports = {p.name: verify_bundle(p, root, keys=keys, current=current, scope=scope) for p in paths}
    chain = ledger.read(contract_dir)
    checked = ledger.check(chain, {p.name: p for p in paths}, {k: r.bundle for k, r in reports.items()})
    blocked = list(checked.problems)
    if chain.exists or paths:  # a ledger git saw and that is gone now shows in its history too
        blocked += ledger.history(chain.path, chain).problems
    unrecorded = {p.resolve() for p in checked.unrecorded}
    removed = chain.removed()
    for path in paths:
        report = reports[path.name]
        if path.name in removed:
            ignored[path] = f"recorded in {ledger.LEDGER_FILE} as {removed[path.name].kind}"
            continue
        if path.resolve() in unrecorded:
            ignored[path] = (
                f"not recorded in {ledger.LEDGER_FILE}: a bundle pv did not write here, or one written before the "
                "ledger (`pv evidence ledger adopt` takes those in)"
            )
            continue
        if not report.ok or report.bundle is None:
            rejected.append(report)
            if report.status in _INTEGRITY:
                problem = next(p for p in report.problems if p.kind == report.status)
                blocked.append(f"bundle {path.name} is {report.status}: {problem.file}: {problem.detail}")
            continue
        why = _not_evidence(report.bundle)
        if why:
            ignored[path] = why
            continue
        counted.append(report)
    counted.sort(key=lambda r: bundle_time(r.bundle) if r.bundle else (_EPOCH, _EPOCH, ""), reverse=True)
    rejected.sort(key=lambda r: bundle_time(r.bundle) if r.bundle else (_EPOCH, _EPOCH, r.path.name), reverse=True)
    falsifiers = declared_falsifiers(current.data)
    declared = [t["id"] for t in falsifiers]
    if blocked:
        reasons = [f"blocked: {b}" for b in blocked]
        return Assessment(Status.DRAFT, None, None, reasons, [], rejected, ignored, blocked=blocked)
    if not counted:
        if rejected:
            why = f"no verified, current bundle ({len(rejected)} rejected: {_rejected_summary(rejected)})"
        elif ignored:
            why = f"no bundle that counts ({_ignored_summary(ignored)})"
        else:
            why = "no evidence"
        return Assessment(Status.DRAFT, None, None, [why], [], rejected, ignored)
    picked = pick_sources(counted)
    sources = {fid: picked[fid] for fid in declared if fid in picked} if declared else picked
    gone = _gone_newer(sources, checked.removed)
    for fid in gone:
        sources.pop(fid)
    status, reasons, falsified = status_from_entries([s.entry for s in sources.values()])
    never = [t["id"] for t in falsifiers if t.get("ship_blocking") and t["id"] not in sources and t["id"] not in gone]
    if gone or never:
        status = Status.DRAFT
    reasons = [*gone.values(), *(f"{fid}: never run in a bundle that counts" for fid in never), *reasons]
    newest = counted[0]
    return Assessment(status, newest.path, newest.bundle, reasons, falsified, rejected, ignored, sources, counted)


def _rejected_summary(rejected: list[BundleReport]) -> str:
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r.status] = counts.get(r.status, 0) + 1
    text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    changes = next((r.code_changes for r in rejected if r.code_changes), None)
    return text + (f"; the newest stale one: code changed since the run: {', '.join(changes)}" if changes else "")


def _ignored_summary(ignored: dict[Path, str]) -> str:
    whys = sorted(set(ignored.values()))
    return f"{len(ignored)} ignored: {whys[0]}" + (f" (and {len(whys) - 1} other reasons)" if len(whys) > 1 else "")


def backing_status(
    evidence_dir: Path, loaded_contract: HasPath | Path, keys: KeyRing | None = None
) -> tuple[Status, Path | None]:
    """The highest status the verified, current evidence supports, and its newest bundle."""
    path = loaded_contract if isinstance(loaded_contract, Path) else Path(loaded_contract.path)
    result = assess(Path(evidence_dir), path, keys=keys)  # the id is read from the contract file itself
    return result.status, result.bundle_path


def status_mismatch(declared: Status, found: Assessment) -> str | None:
    """None when ``declared`` is exactly what the evidence supports; else what is wrong.

    The one rule of ``pv lint``'s status gate and ``pv promote --check``.  Blocked evidence (a
    broken ledger, a recorded bundle gone or tampered) is a mismatch whatever is declared."""
    if declared is Status.RETIRED:
        return None
    if found.blocked:
        return "evidence blocked: " + "; ".join(found.blocked)
    if declared is found.status:
        return None
    why = "; ".join(found.reasons) if found.reasons else "no reason recorded"
    if RANK.get(declared, 0) > RANK[found.status]:
        return f"status {declared.value} but the verified evidence backs only {found.status.value} ({why})"
    return f"status {declared.value} but the verified evidence backs {found.status.value}: run `pv promote`"
