"""One run over several machines: falsifiers split into shards, each shard's part, and the merge.

``pytest --pv-shard K/N`` keeps the K-th of N shards of the selected falsifiers.  The split is the
longest-first greedy one of pytest-split's ``least_duration``: each falsifier (with all its cases)
weighs the duration the newest bundle of its contract recorded for it (a falsifier no bundle
recorded weighs the median of those that were), and goes, heaviest first, to the shard with the
least weight so far (ties to the lowest shard; equal weights in falsifier order).  Every job of a
CI matrix computes the same split from the same checkout, and each part records the whole split.

With ``--pv-evidence``, a shard writes its part instead of bundles: ``<evidence>/.parts/<name>/``
holds ``part.json`` (the shard, the split, the commit, the machine, and the run record exactly as
a one-machine session would have written bundles from it), the artifacts its checkers wrote
(each with its sha256 in ``part.json``) and, with a signing key, ``part.dsse.json``: a DSSE
envelope over ``part.json`` whose payload type is :data:`PAYLOAD_TYPE`.

A part is written as ``.tmp-<name>/`` and renamed when whole: an unfinished one (its shard stopped
while writing it) is never read, so its shard is missing.  ``pv evidence merge PART...`` reads the
parts and writes one run's bundles.  It refuses parts of
different commits, splits, shard counts or mutant settings; a contract whose bytes or measured
code differ between parts; a shard given twice or a falsifier in two parts; a falsifier the split
gave a part that the part did not run; an artifact whose bytes are not the ones listed; and, where
trusted keys are configured, a part not signed by one of them (and, with or without keys, a part
whose signature does not verify).  A shard that is missing leaves its falsifiers ``not_run``: the
merged run is partial and supersedes nothing, as a one-machine partial run.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pv.bundle.digest import dumps
from pv.bundle.model import BUNDLE_FILE, Environment
from pv.bundle.signing import KeyRing, Signer, check_envelope
from pv.cases import verdicts
from pv.evidence.verify import find_bundles
from pv.evidence.writer import ran
from pv.results import ContractRun, FalsifierResult, RunRecord

PARTS_DIR = ".parts"
PART_FILE = "part.json"
PART_ENVELOPE = "part.dsse.json"
PART_FORMAT = "pv-evidence-part/1"
PAYLOAD_TYPE = "application/vnd.pv.evidence-part+json"
FILES_DIR = "files"
UNFINISHED_PREFIX = ".tmp-"  # a part being written; renamed to its name when whole
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A shard option, a part or a set of parts that cannot make one run; the text says which and why."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as (K, N), 1 <= K <= N."""
    m = _SHARD.match(text)
    if m is None:
        raise ShardError(f"--pv-shard {text!r}: give the shard as K/N, e.g. 2/4 (the second of four)")
    k, n = int(m[1]), int(m[2])
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"--pv-shard {text!r}: K must be between 1 and N (N at least 1)")
    return k, n


def key_of(contract_id: str, falsify_id: str) -> str:
    return f"{contract_id}::{falsify_id}"


def recorded_durations(evidence_dir: Path) -> dict[str, float]:
    """Seconds each falsifier took in the newest bundle of its contract that ran it, by
    :func:`key_of`.  Only a weight for the split: a bundle that does not verify can unbalance the
    shards, never change a verdict."""
    out: dict[str, float] = {}
    if not evidence_dir.is_dir():
        return out
    for contract_dir in sorted(p for p in evidence_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for bundle in sorted(find_bundles(contract_dir), key=lambda p: p.name):  # run ids sort by time
            try:
                data = json.loads((bundle / BUNDLE_FILE).read_text(encoding="utf-8"))
                cid = str(data["contract"]["id"])
                entries = [(str(f["id"]), f) for f in data["falsifiers"] if f.get("selected")]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            for fid, entry in entries:
                duration = entry.get("duration_s")
                if isinstance(duration, int | float) and duration >= 0:
                    out[key_of(cid, fid)] = float(duration)
    return out


def split(keys: Iterable[str], durations: Mapping[str, float], shards: int) -> dict[str, int]:
    """Each key's shard (1-based): heaviest first onto the least-loaded shard (pytest-split's
    least_duration).  A key without a recorded duration weighs the median of the recorded ones."""
    ordered = sorted(set(keys))
    known = [durations[k] for k in ordered if k in durations]
    default = statistics.median(known) if known else 1.0
    weights = {k: durations.get(k, default) for k in ordered}
    loads = [0.0] * shards
    plan: dict[str, int] = {}
    for key in sorted(ordered, key=lambda k: (-weights[k], k)):
        shard = min(range(shards), key=lambda s: (loads[s], s))
        loads[shard] += weights[key]
        plan[key] = shard + 1
    return plan


# --- a part ------------------------------------------------------------------------------------


@dataclass
class Part:
    """One shard's run, as read back (artifact paths resolved into the part's folder)."""

    path: Path
    shard: int
    shards: int
    plan: dict[str, int]
    commit: str | None
    environment: dict[str, Any]
    run: RunRecord
    signed_by: str | None = None
    notes: list[str] = field(default_factory=list)


def _run_json(run: RunRecord) -> dict[str, Any]:
    data = {f.name: getattr(run, f.name) for f in fields(run)}
    data["contracts"] = {cid: asdict(c) for cid, c in run.contracts.items()}
    data["results"] = [r.to_json() for r in run.results]
    return data


def _run_from(data: Mapping[str, Any]) -> RunRecord:
    return RunRecord(
        run_id=str(data["run_id"]),
        started_at=str(data["started_at"]),
        finished_at=str(data["finished_at"]),
        contracts={str(cid): ContractRun(**c) for cid, c in data["contracts"].items()},
        results=[FalsifierResult.from_json(r) for r in data["results"]],
        mutants_enabled=bool(data["mutants_enabled"]),
        selection=str(data["selection"]),  # a part holds every field of its run (_run_json)
        interrupted=bool(data["interrupted"]),
        settings=dict(data["settings"]),
        recovered=bool(data["recovered"]),
    )


def _all_results(results: Iterable[FalsifierResult]) -> Iterable[FalsifierResult]:
    for r in results:
        yield r
        yield from _all_results(r.cases)


def write_part(
    run: RunRecord,
    evidence_dir: Path,
    shard: int,
    shards: int,
    plan: Mapping[str, int],
    environment: Environment,
    signer: Signer | None = None,
) -> Path:
    """Write shard ``shard`` of ``shards``'s part: ``run`` with its artifacts copied in, signed when
    a signer is given.  Written beside its final name first, so a part is whole or absent."""
    name = f"{run.run_id}-shard-{shard}-of-{shards}"
    final = evidence_dir / PARTS_DIR / name
    tmp = final.with_name(f"{UNFINISHED_PREFIX}{name}")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / FILES_DIR).mkdir(parents=True)
    files: dict[str, str] = {}
    for n, result in enumerate(_all_results(run.results)):
        kept = []
        for i, artifact in enumerate(result.artifacts):
            source = Path(artifact)
            if not source.is_file():
                continue
            rel = f"{FILES_DIR}/{n}-{i}-{source.name}"
            shutil.copyfile(source, tmp / rel)
            files[rel] = hashlib.sha256((tmp / rel).read_bytes()).hexdigest()
            kept.append(rel)
        result.artifacts = kept
    data = {
        "format": PART_FORMAT,
        "shard": shard,
        "shards": shards,
        "plan": dict(sorted(plan.items())),
        "commit": environment.git_commit,
        "environment": environment.model_dump(mode="json"),
        "files": files,
        "run": _run_json(run),
    }
    payload = dumps(data).encode("utf-8")
    (tmp / PART_FILE).write_bytes(payload)
    if signer is not None:
        envelope = signer.envelope(payload, PAYLOAD_TYPE)
        (tmp / PART_ENVELOPE).write_text(json.dumps(envelope, indent=2) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def find_parts(path: Path) -> tuple[list[Path], list[Path]]:
    """The part folders at ``path`` (a part, its ``part.json``, or a folder holding parts), and apart
    from them the unfinished ones a shard left when it stopped while writing (never read)."""
    if path.name == PART_FILE:
        path = path.parent
    found = [path] if (path / PART_FILE).is_file() else sorted(p.parent for p in path.glob(f"**/{PART_FILE}"))
    unfinished = [p for p in found if p.name.startswith(UNFINISHED_PREFIX)]
    return [p for p in found if p not in unfinished], unfinished


def read_part(path: Path, keys: KeyRing | None) -> Part:
    """A part folder (or its ``part.json``), its signature and artifacts checked."""
    folder = path.parent if path.name == PART_FILE else path
    where = str(folder)
    if folder.name.startswith(UNFINISHED_PREFIX):
        raise ShardError(f"{where}: an unfinished part (its shard stopped while writing it); run that shard again")
    try:
        payload = (folder / PART_FILE).read_bytes()
        data = json.loads(payload)
    except OSError as exc:
        raise ShardError(f"{where}: not a part ({PART_FILE} unreadable: {exc.strerror or exc})") from None
    except ValueError as exc:
        raise ShardError(f"{where}: {PART_FILE} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != PART_FORMAT:
        raise ShardError(f"{where}: {PART_FILE} is not a pv evidence part ({PART_FORMAT})")
    signed_by, notes = _check_signature(folder, payload, keys)
    try:
        shard, shards = int(data["shard"]), int(data["shards"])
        plan = {str(k): int(v) for k, v in dict(data["plan"]).items()}
        files = {str(k): str(v) for k, v in dict(data["files"]).items()}
        run = _run_from(data["run"])
        environment = dict(data["environment"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ShardError(f"{where}: {PART_FILE} lacks or misstates {exc}") from None
    for rel, digest in files.items():
        file = folder / rel
        if not file.resolve().is_relative_to(folder.resolve()):
            raise ShardError(f"{where}: artifact {rel} lies outside the part")
        try:
            found = hashlib.sha256(file.read_bytes()).hexdigest()
        except OSError:
            raise ShardError(f"{where}: artifact {rel} is missing") from None
        if found != digest:
            raise ShardError(f"{where}: artifact {rel} is not the file the part lists (sha256 {found[:12]})")
    for result in _all_results(run.results):
        if any(a not in files for a in result.artifacts):
            raise ShardError(f"{where}: {result.falsify_id} names an artifact the part does not list")
        result.artifacts = [str(folder / a) for a in result.artifacts]
    return Part(folder, shard, shards, plan, data.get("commit"), environment, run, signed_by, notes)


def _check_signature(folder: Path, payload: bytes, keys: KeyRing | None) -> tuple[str | None, list[str]]:
    try:
        envelope = json.loads((folder / PART_ENVELOPE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        if keys is not None:
            raise ShardError(f"{folder}: unsigned, and trusted keys are configured") from None
        return None, ["unsigned"]
    except (OSError, ValueError) as exc:
        raise ShardError(f"{folder}: {PART_ENVELOPE} unreadable: {exc}") from None
    check = check_envelope(envelope, payload, keys, PAYLOAD_TYPE)
    if check.status == "tampered":
        raise ShardError(f"{folder}: tampered: {check.why}")
    if check.status == "untrusted":
        raise ShardError(f"{folder}: untrusted: {check.why}")
    return check.signed_by, ([check.why] if check.why else [])


# --- the merge ---------------------------------------------------------------------------------


@dataclass
class Merged:
    """One run from the parts given: the record to write, and what a reader must know of it."""

    run: RunRecord
    shards: int
    present: list[int]
    missing_shards: list[int]
    not_run: list[str]  # falsifiers of the missing shards


def _same(parts: Sequence[Part], what: str, value: Any) -> None:
    seen: dict[str, list[int]] = {}
    for p in parts:
        seen.setdefault(json.dumps(value(p), sort_keys=True, default=str), []).append(p.shard)
    if len(seen) > 1:
        groups = "; ".join(f"shards {', '.join(map(str, s))}: {v[:80]}" for v, s in seen.items())
        raise ShardError(f"the parts are not one run: their {what} differ ({groups})")


def merge(parts: Sequence[Part]) -> Merged:
    """The one run the parts make, or :class:`ShardError` naming what keeps them apart."""
    if not parts:
        raise ShardError("no parts to merge")
    _same(parts, "shard counts", lambda p: p.shards)
    _same(parts, "commits", lambda p: p.commit)
    _same(parts, "splits", lambda p: p.plan)
    _same(parts, "mutant settings", lambda p: p.run.mutants_enabled)
    by_shard: dict[int, Part] = {}
    for p in parts:
        if p.shard in by_shard:
            raise ShardError(f"shard {p.shard} of {p.shards} is given twice: {by_shard[p.shard].path} and {p.path}")
        by_shard[p.shard] = p
    contracts: dict[str, ContractRun] = {}
    for p in sorted(parts, key=lambda p: p.shard):
        for cid, measured in p.run.contracts.items():
            first = contracts.setdefault(cid, measured)
            if (first.sha256, first.code) != (measured.sha256, measured.code):
                what = "bytes" if first.sha256 != measured.sha256 else "measured code"
                raise ShardError(f"contract {cid}: the parts measured different {what} (shard {p.shard} differs)")
    plan = parts[0].plan
    results: list[FalsifierResult] = []
    ran_in: dict[str, int] = {}
    for p in sorted(parts, key=lambda p: p.shard):
        ran_here = {key_of(r.contract_id, r.falsify_id): r for r in p.run.results if ran(r)}
        for key, r in ran_here.items():
            if key in ran_in:
                raise ShardError(f"{key} ran in shard {ran_in[key]} and in shard {p.shard}: a falsifier is in one part")
            if plan.get(key) != p.shard:
                raise ShardError(f"{key} ran in shard {p.shard}, which the split did not give it")
            ran_in[key] = p.shard
            results.extend([r] if not r.cases else r.cases)
        owed = sorted(k for k, s in plan.items() if s == p.shard and k not in ran_here)
        if owed:
            more = f" (and {len(owed) - 1} more)" if len(owed) > 1 else ""
            raise ShardError(
                f"shard {p.shard}'s part lacks {owed[0]}{more}, which the split gave it: run the shard again"
            )
    shards = parts[0].shards
    missing = sorted(set(range(1, shards + 1)) - set(by_shard))
    not_run = sorted(k for k, s in plan.items() if s in missing)
    earliest = min(parts, key=lambda p: p.run.started_at).run
    run = RunRecord(
        run_id=earliest.run_id,
        started_at=earliest.started_at,
        finished_at=max(p.run.finished_at for p in parts),
        contracts=contracts,
        results=verdicts(results, contracts),
        mutants_enabled=earliest.mutants_enabled,
        selection=" ".join(filter(None, [earliest.selection, f"shards {_shard_list(by_shard)} of {shards}"])),
        interrupted=bool(missing) or any(p.run.interrupted for p in parts),
        settings=dict(earliest.settings),
    )
    return Merged(run, shards, sorted(by_shard), missing, not_run)


def _shard_list(by_shard: Mapping[int, Part]) -> str:
    return ",".join(str(s) for s in sorted(by_shard))
