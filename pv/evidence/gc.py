"""``pv evidence gc``: keep the newest N current bundles per contract, never one whose verdicts back
a status nor one that the contract's changelog names while that bundle is still current; remove
bundles that are history (stale or superseded: bound to contract bytes that have since changed,
or to a contract that is gone).

A removed bundle that the contract's ledger records is named there as ``pruned``
(:mod:`pv.evidence.ledger`): its falsifiers' verdicts are gone with it, which the ledger keeps
visible, and gc never removes a bundle whose verdicts back a status.

Also removes ``.tmp-*`` folders left by killed writers, unless the process that owns one (its
pid is the folder name's last part) is still running on this machine.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.model import TMP_PREFIX
from pv.evidence import ledger
from pv.evidence.verify import find_bundles


@dataclass
class GcPlan:
    remove: list[Path] = field(default_factory=list)
    keep: list[Path] = field(default_factory=list)
    protected: list[Path] = field(default_factory=list)  # kept because they back a status
    tmp: list[Path] = field(default_factory=list)
    history: list[Path] = field(default_factory=list)  # stale or superseded: removed


def pid_alive(pid: int) -> bool:
    try:
        # signal 0 only asks; not mutated: os.kill(pid, 1) would send SIGHUP to whatever has that pid
        os.kill(pid, 0)  # pragma: no mutate
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_tmp_dirs(evidence_dir: Path) -> list[Path]:
    found: list[Path] = []
    if not evidence_dir.is_dir():
        return found
    for contract_dir in sorted(p for p in evidence_dir.iterdir() if p.is_dir()):
        for tmp in sorted(contract_dir.glob(f"{TMP_PREFIX}*")):
            pid = tmp.name.rsplit("-", 1)[-1]
            if tmp.is_dir() and not (pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid))):
                found.append(tmp)
    return found


def changelog_bundles(data: Any, root: Path) -> list[Path]:
    """Bundles a contract's changelog names (``pv promote`` entries), from its parsed ``data`` (None
    for a contract that does not load: it names nothing)."""
    meta = data.get("metadata") if isinstance(data, dict) else None
    log = meta.get("changelog") if isinstance(meta, dict) else None
    if not isinstance(log, list):
        return []
    return [root / e["evidence"] for e in log if isinstance(e, dict) and isinstance(e.get("evidence"), str)]


def plan(
    evidence_dir: Path,
    keep: int,
    backing: Iterable[Path],
    history: Iterable[Path] = (),
) -> GcPlan:
    """``backing``: never removed.  ``history``: removed whatever ``keep`` says.  The rest: the
    newest ``keep`` per contract stay, newest by run id (verify requires a run id to carry the
    run's recorded start time, so for a bundle that verifies this is the order of its times)."""
    if keep < 1:
        raise ValueError("--keep must be at least 1")
    protect = {p.resolve() for p in backing}
    old = {p.resolve() for p in history}
    result = GcPlan(tmp=stale_tmp_dirs(evidence_dir))
    by_contract: dict[Path, list[Path]] = {}
    for bundle in find_bundles(evidence_dir):
        by_contract.setdefault(bundle.parent, []).append(bundle)
    for bundles in by_contract.values():
        newest_first = sorted(bundles, key=lambda p: p.name, reverse=True)
        # a bundle backing a status is listed as protected even when it is history as well
        current = [b for b in newest_first if b.resolve() not in old or b.resolve() in protect]
        for bundle in bundles:
            if bundle.resolve() in old and bundle.resolve() not in protect:
                result.history.append(bundle)
                result.remove.append(bundle)
        for i, bundle in enumerate(current):
            if bundle.resolve() in protect:
                result.protected.append(bundle)
            elif i < keep:
                result.keep.append(bundle)
            else:
                result.remove.append(bundle)
    return result


def apply(gc_plan: GcPlan) -> None:
    """Remove the plan's folders; a bundle the ledger records gets a ``pruned`` line first, so the
    chain says where it went (a crash in between leaves a pruned bundle on disk, which never counts)."""
    for path in gc_plan.tmp:
        shutil.rmtree(path)
    for path in gc_plan.remove:
        with ledger.locked(path.parent) as chain:
            entry = chain.recorded().get(path.name)
            if entry is not None:
                ledger.append(chain, "pruned", entry.run_id, entry.digest, verdicts=entry.verdicts)
            shutil.rmtree(path)
