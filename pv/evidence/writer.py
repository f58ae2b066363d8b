"""Turns a ``RunRecord`` into evidence bundles, written atomically.

Each bundle is assembled in ``<evidence>/<contract>/.tmp-<run-id>-<pid>/`` (every file and the
folder fsynced) and then renamed to ``<evidence>/<contract>/<run-id>/``.  A run killed at any
moment leaves a complete bundle or a ``.tmp-*`` folder that verify ignores and gc removes.
``MANIFEST.sha256`` is written last and lists every other file, so a bundle missing it is
incomplete even if someone renames the folder by hand.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle import intoto
from pv.bundle.digest import (
    ContractUnreadable,
    binding_digest_of,
    contract_data,
    declared_falsifiers,
    dumps,
    holds_utf8,
    jsonable,
    sha256_bytes,
    sha256_file,
)
from pv.bundle.model import (
    ARTIFACTS_DIR,
    BUNDLE_FILE,
    ENVELOPE_FILE,
    MANIFEST_FILE,
    RUN_ID_TIME_FORMAT,
    STATEMENT_FILE,
    TMP_PREFIX,
    ArtifactEntry,
    ArtifactKind,
    Bundle,
    CaseEntry,
    ChainLink,
    CodeRef,
    ContractRef,
    Environment,
    FalsifierEntry,
    MutantEntry,
    RunSettings,
    Summary,
    parse_time,
)
from pv.bundle.signing import Signer
from pv.evidence import ledger
from pv.evidence.code_binding import CodeScope, code_changes
from pv.results import ContractRun, FalsifierResult, RunRecord, Verdict

_PLOT_SUFFIXES = {".png", ".jpg", ".jpeg", ".svg", ".pdf"}
_LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".jsonl", ".csv"}
_KIND_DIRS: dict[ArtifactKind, str] = {"log": "logs", "plot": "plots", "file": "files"}


class EvidenceError(Exception):
    """A run record that cannot be turned into honest evidence."""


@dataclass
class Prepared:
    """A bundle ready to write: the model plus where each artifact is copied from."""

    bundle: Bundle
    copies: list[tuple[Path, str]] = field(default_factory=list)  # (source file, bundle-relative path)


@dataclass
class Outcome:
    contract_id: str
    path: Path | None  # the written bundle, None when nothing was written
    reason: str = ""


def artifact_kind(path: Path) -> ArtifactKind:
    suffix = path.suffix.lower()
    if suffix in _PLOT_SUFFIXES:
        return "plot"
    if suffix in _LOG_SUFFIXES:
        return "log"
    return "file"


def make_run_id(started_at: str, salt: str) -> str:
    """``YYYYMMDDTHHMMSSffffffZ-<8 hex>``: sorts by start time; the digest keeps two bundles of
    the same contract apart even when they start in the same microsecond."""
    when = parse_time(started_at) or _dt.datetime.now(_dt.UTC)
    digest = hashlib.sha256(f"{salt}|{os.getpid()}|{_dt.datetime.now(_dt.UTC).isoformat()}".encode()).hexdigest()
    return when.strftime(RUN_ID_TIME_FORMAT) + "-" + digest[:8]


def _requires(raw: Any) -> list[str]:
    if raw is None:
        return []
    return [str(r) for r in raw] if isinstance(raw, list) else [str(raw)]


def _files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def listable(rel: str) -> bool:
    """Whether a line of ``MANIFEST.sha256`` can hold the name ``rel``: no line break, and UTF-8
    (a file name of undecodable bytes comes as surrogates)."""
    return "\n" not in rel and "\r" not in rel and holds_utf8(rel)


def _artifact_copies(falsify_id: str, sources: list[str]) -> tuple[list[tuple[Path, str, ArtifactKind]], list[str]]:
    """Where each produced file goes in the bundle, keeping paths below their common parent."""
    present = [Path(s) for s in sources if Path(s).exists()]
    missing = [s for s in sources if not Path(s).exists()]
    files: list[Path] = []
    for p in present:
        files.extend(_files_under(p))
    if not files:
        return [], missing
    base = Path(os.path.commonpath([str(f.parent) for f in files]))
    out: list[tuple[Path, str, ArtifactKind]] = []
    seen: set[str] = set()
    for f in files:
        kind = artifact_kind(f)
        rel = f"{ARTIFACTS_DIR}/{_KIND_DIRS[kind]}/{falsify_id}/{f.relative_to(base).as_posix()}"
        if rel not in seen:
            seen.add(rel)
            out.append((f, rel, kind))
    return out, missing


def ran(result: FalsifierResult) -> bool:
    """Whether any of it ran: a parametrized falsifier with some cases run is not_run, yet measured."""
    return result.verdict is not Verdict.NOT_RUN or any(c.verdict is not Verdict.NOT_RUN for c in result.cases)


def _entry(
    falsify_id: str, declared: dict[str, Any], result: FalsifierResult | None, mutants_enabled: bool
) -> FalsifierEntry:
    declared_mutant = declared.get("mutant")
    ship_blocking = bool(declared.get("ship_blocking", result.ship_blocking if result else False))
    if result is None:
        return FalsifierEntry(
            id=falsify_id,
            ship_blocking=ship_blocking,
            selected=False,
            verdict="not_run",
            expect=declared.get("expect"),
            params=jsonable(declared.get("params") or {}),
            requires=_requires(declared.get("requires")),
            message="not selected in this run",
            mutant=MutantEntry(declared=declared_mutant, verdict=None),
        )
    mutant = result.mutant
    return FalsifierEntry(
        id=falsify_id,
        ship_blocking=ship_blocking,
        selected=ran(result),
        verdict=result.verdict.value,
        expect=result.expect if result.expect is not None else declared.get("expect"),
        params=jsonable(result.params or declared.get("params") or {}),
        requires=_requires(declared.get("requires")),
        observations=jsonable(result.observations),
        noise=jsonable(result.noise),
        seed=result.seed,
        duration_s=float(result.duration_s),
        message=result.message,
        skip_reason=result.skip_reason,
        # decided where the skip was (pv.plugin); a result without one (an older journal) backs nothing
        skip_kind=("hardware" if result.skip_kind == "hardware" else "other")
        if result.verdict is Verdict.SKIPPED
        else None,
        mutant=MutantEntry(
            declared=declared_mutant if declared_mutant is not None else (mutant.mutant if mutant else None),
            verdict=mutant.verdict.value if mutant else None,
            killed=mutant.killed if mutant else None,
            observations=jsonable(mutant.observations) if mutant else {},
            message=mutant.message if mutant else ("" if mutants_enabled or not declared_mutant else "mutants not run"),
        ),
        hypothesis=jsonable(result.hypothesis),
        worker=result.worker,
        device=result.device,
        timeout_s=result.timeout_s,
        isolation=result.isolation,  # type: ignore[arg-type]
        aggregate=result.aggregate,
        cases=[_case_entry(c) for c in result.cases],
    )


def _case_entry(case: FalsifierResult) -> CaseEntry:
    m = case.mutant
    return CaseEntry(
        id=case.case or "",
        verdict=case.verdict.value,
        params=jsonable(case.params),
        observations=jsonable(case.observations),
        noise=jsonable(case.noise),
        seed=case.seed,
        duration_s=float(case.duration_s),
        message=case.message,
        skip_reason=case.skip_reason,
        mutant=MutantEntry(
            declared=m.mutant,
            verdict=m.verdict.value,
            killed=m.killed,
            observations=jsonable(m.observations),
            message=m.message,
        )
        if m is not None
        else None,
        worker=case.worker,
    )


def _place(
    fid: str, case: str | None, sources: list[str], copies: list[tuple[Path, str]], artifacts: list[ArtifactEntry]
) -> tuple[list[str], str]:
    """Queue a result's files for the bundle; their bundle paths, and a note naming any that vanished
    or that a manifest cannot list."""
    if not sources:
        return [], ""
    placed, missing = _artifact_copies(f"{fid}/{case}" if case is not None else fid, sources)
    rels: list[str] = []
    unlisted: list[str] = []
    for src, rel, kind in placed:
        if not listable(rel):
            unlisted.append(repr(str(src)))  # repr: the note stays one printable line
            continue
        copies.append((src, rel))
        artifacts.append(
            ArtifactEntry(
                path=rel,
                sha256=sha256_file(src),
                size=src.stat().st_size,
                kind=kind,
                falsifier=fid,
                case=case,
                source=str(src),
            )
        )
        rels.append(rel)
    notes = []
    if missing:
        notes.append("artifacts reported but not found: " + ", ".join(missing))
    if unlisted:
        notes.append(
            "artifacts not copied, their names hold a line break or bytes that are not UTF-8: " + ", ".join(unlisted)
        )
    return rels, "\n".join(notes)


def _summary(entries: list[FalsifierEntry]) -> Summary:
    counts = Counter(e.verdict for e in entries)
    reasons = Counter(e.skip_reason or "unspecified" for e in entries if e.verdict == "skipped")
    return Summary(
        declared=len(entries),
        selected=sum(e.selected for e in entries),
        survived=counts["survived"],
        falsified=counts["falsified"],
        error=counts["error"],
        skipped=counts["skipped"],
        inconclusive=counts["inconclusive"],
        not_run=counts["not_run"],
        mutants_killed=sum(e.mutant.killed is True for e in entries),
        mutants_survived=sum(e.mutant.verdict is not None and e.mutant.killed is False for e in entries),
        skip_reasons=dict(sorted(reasons.items())),
    )


def prepare(
    record: RunRecord,
    contract: ContractRun,
    contract_bytes: bytes,
    root: Path,
    environment: Environment,
    scope: CodeScope | None = None,
) -> Prepared:
    """Build one contract's bundle; every declared falsifier gets an explicit verdict.

    The code it records is the snapshot the run took when it collected the contract; with
    ``scope``, the files as they are now must still match it (a checker or the system under test
    edited during the run measured neither version), and a run without a snapshot takes it now."""
    try:
        data = contract_data(contract_bytes, contract.path)
    except ContractUnreadable as exc:
        raise EvidenceError(f"the contract no longer loads: {exc}") from None
    declared = {t["id"]: t for t in declared_falsifiers(data)}
    order = list(contract.declared) or list(declared)
    order += [i for i in declared if i not in order]
    results: dict[str, FalsifierResult] = {}
    for r in record.results:
        if r.contract_id != contract.contract_id:
            continue
        if r.falsify_id in results:
            raise EvidenceError(f"{contract.contract_id}::{r.falsify_id} reported twice in one run")
        results[r.falsify_id] = r
    order += [i for i in results if i not in order]

    copies: list[tuple[Path, str]] = []
    artifacts: list[ArtifactEntry] = []
    entries: list[FalsifierEntry] = []
    for fid in order:
        result = results.get(fid)
        entry = _entry(fid, declared.get(fid, {}), result, record.mutants_enabled)
        if result is not None:
            entry.artifacts, note = _place(fid, None, result.artifacts, copies, artifacts)
            for case, case_entry in zip(result.cases, entry.cases, strict=True):
                case_entry.artifacts, case_note = _place(fid, case.case, case.artifacts, copies, artifacts)
                case_entry.message = f"{case_entry.message}\n{case_note}".strip()
            entry.message = f"{entry.message}\n{note}".strip()
        entries.append(entry)

    path = Path(contract.path)
    try:
        rel_path = (path.resolve().relative_to(root.resolve()) if path.is_absolute() else path).as_posix()
    except ValueError:
        rel_path = path.as_posix()
    ref = ContractRef(
        id=contract.contract_id,
        path=rel_path,
        version=contract.version,
        status=contract.status,
        sha256=contract.sha256,
        binding_digest=binding_digest_of(data),
    )
    code = contract.code
    if scope is not None or code is None:
        now = (scope or CodeScope.governing(root)).snapshot(path if path.is_absolute() else root / path, data)
        if code is None:
            code = now
        elif code.get("files") != now["files"]:
            changed = ", ".join(code_changes(code.get("files") or {}, now["files"]))
            raise EvidenceError(f"the code it measures changed during the run ({changed}); no evidence written")
    bundle = Bundle(
        run_id=make_run_id(record.started_at, f"{record.run_id}|{contract.contract_id}|{ref.binding_digest}"),
        session_id=record.run_id,
        started_at=record.started_at,
        finished_at=record.finished_at,
        interrupted=record.interrupted,
        recovered=record.recovered,
        mutants_enabled=record.mutants_enabled,
        selection=record.selection,
        settings=RunSettings.model_validate(record.settings) if record.settings else None,
        contract=ref,
        environment=environment,
        falsifiers=entries,
        summary=_summary(entries),
        artifacts=sorted(artifacts, key=lambda a: a.path),
        code=CodeRef.model_validate(code) if code is not None else None,
    )
    return Prepared(bundle=bundle, copies=copies)


# --- the atomic write; each step is a function so a test can stop the process between them ---


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _copy_file(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        os.fsync(fout.fileno())


def _publish(tmp: Path, final: Path) -> None:
    for d in sorted({p for p in tmp.rglob("*") if p.is_dir()} | {tmp}, key=lambda p: len(p.parts), reverse=True):
        _fsync_dir(d)
    os.rename(tmp, final)  # atomic on one filesystem; fails if final exists
    _fsync_dir(final.parent)


def manifest_text(entries: dict[str, str]) -> str:
    return "".join(f"{digest}  {rel}\n" for rel, digest in sorted(entries.items()))


# fullmatch: `$` would let a trailing newline through.  A first character that is a letter or digit
# already rules out "", "." and ".."
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def contract_dir_for(evidence_dir: Path, contract_id: str) -> Path:
    """``<evidence>/<id>``, refusing an id that is not a plain name or would land outside."""
    if not _SAFE_ID.fullmatch(contract_id):
        raise EvidenceError(f"contract id {contract_id!r} is not a safe folder name; no evidence written")
    target = (evidence_dir / contract_id).resolve()
    if not target.is_relative_to(evidence_dir.resolve()) or target == evidence_dir.resolve():
        raise EvidenceError(f"contract id {contract_id!r} would write outside {evidence_dir}")
    return evidence_dir / contract_id


def write_bundle(prepared: Prepared, evidence_dir: Path, signer: Signer | None = None) -> Path:
    """Write the bundle as the next link of its contract's ledger, and record it there."""
    contract_dir = contract_dir_for(evidence_dir, prepared.bundle.contract.id)
    with ledger.locked(contract_dir) as chain:
        if chain.problems:
            raise EvidenceError(
                f"the ledger {chain.path} is broken ({chain.problems[0]}); no evidence written: "
                "`pv evidence verify` says what happened"
            )
        last = chain.last_bundle()
        link = ChainLink(seq=len(chain.lines) + 1, previous=last.digest if last is not None else None)
        bundle = prepared.bundle.model_copy(update={"chain": link})
        final = _write_files(Prepared(bundle, prepared.copies), contract_dir, signer)
        digest = ledger.bundle_digest(final)
        assert digest is not None
        ledger.append(chain, "bundle", bundle.run_id, digest, verdicts=ledger.verdicts_of(bundle))
    return final


def _write_files(prepared: Prepared, contract_dir: Path, signer: Signer | None) -> Path:
    bundle = prepared.bundle
    final = contract_dir / bundle.run_id
    if final.exists():
        raise EvidenceError(f"bundle {final} already exists")
    tmp = contract_dir / f"{TMP_PREFIX}{bundle.run_id}-{os.getpid()}"
    tmp.mkdir()
    digests: dict[str, str] = {}
    for src, rel in prepared.copies:
        _copy_file(src, tmp / rel)
        digests[rel] = sha256_file(tmp / rel)
    expected = {a.path: a.sha256 for a in bundle.artifacts}
    changed = sorted(rel for rel, d in digests.items() if expected.get(rel) != d)
    if changed:  # a checker still writing, or a file replaced under us: never attest to it
        shutil.rmtree(tmp, ignore_errors=True)
        raise EvidenceError(f"artifacts changed while being copied: {', '.join(changed)}")
    statement = dumps(intoto.statement(bundle)).encode()
    files = [(BUNDLE_FILE, dumps(bundle.model_dump(mode="json")).encode()), (STATEMENT_FILE, statement)]
    if signer is not None:
        files.append((ENVELOPE_FILE, dumps(signer.envelope(statement)).encode()))
    for name, data in files:
        _write_file(tmp / name, data)
        digests[name] = sha256_bytes(data)
    _write_file(tmp / MANIFEST_FILE, manifest_text(digests).encode())
    _publish(tmp, final)
    return final


def write_run(
    record: RunRecord,
    evidence_dir: Path,
    root: Path,
    environment: Environment,
    signer: Signer | None = None,
    scope: CodeScope | None = None,
) -> list[Outcome]:
    """One bundle per contract that had falsifiers selected in ``record``.  ``scope``: check the
    code each contract's run measured against the files now (a session's own write; a journal
    recovered later records the code its session started on)."""
    outcomes: list[Outcome] = []
    # deselected falsifiers come back as not_run: a contract none of whose falsifiers ran gets no bundle
    selected = {r.contract_id for r in record.results if ran(r)}
    for cid in sorted(selected):
        contract = record.contracts.get(cid)
        if contract is None:
            outcomes.append(Outcome(cid, None, "results for a contract the run did not load"))
            continue
        path = Path(contract.path)
        path = path if path.is_absolute() else root / path
        try:
            data = path.read_bytes()
        except OSError as exc:
            outcomes.append(Outcome(cid, None, f"contract file unreadable: {exc}"))
            continue
        if sha256_bytes(data) != contract.sha256:
            outcomes.append(Outcome(cid, None, "contract file changed during the run; no evidence written"))
            continue
        try:
            prepared = prepare(record, contract, data, root, environment, scope)
            outcomes.append(Outcome(cid, write_bundle(prepared, evidence_dir, signer)))
        except (EvidenceError, OSError) as exc:  # one contract's failure must not lose the others'
            outcomes.append(Outcome(cid, None, str(exc)))
    return outcomes
