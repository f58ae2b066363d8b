"""Which status a contract's evidence supports: DESIGN.md's ladder, computed, never declared.

Only the newest bundle that verifies and is bound to the contract as it stands counts.  From it:
``ACTIVE`` when every ship-blocking falsifier survived and killed its named mutant;
``ACTIVE_ALGORITHM_LEVEL`` when those that could run did so and the rest were skipped only for
hardware (CUDA, GPU memory); ``DRAFT`` otherwise.  A contract with no ship-blocking falsifier, or
one where none ran, has nothing backing it and stays ``DRAFT``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pv.evidence.bundle import Bundle
from pv.evidence.digest import load_yaml
from pv.evidence.verify import BundleReport, find_bundles, verify_bundle
from pv.model import Status

RANK: dict[Status, int] = {Status.DRAFT: 0, Status.ACTIVE_ALGORITHM_LEVEL: 1, Status.ACTIVE: 2}


class HasPath(Protocol):
    """What is needed of ``pv.loader.LoadedContract``."""

    @property
    def path(self) -> Path: ...


@dataclass
class Assessment:
    status: Status
    bundle_path: Path | None
    bundle: Bundle | None = None
    reasons: list[str] = field(default_factory=list)  # why not higher
    falsified: list[str] = field(default_factory=list)  # ship-blocking ids falsified in that bundle
    rejected: list[BundleReport] = field(default_factory=list)  # newer bundles that did not count


def contract_id_of(path: Path, data: Any = None) -> str:
    if data is None:
        try:
            data = load_yaml(path.read_bytes())
        except Exception:
            data = None
    meta = data.get("metadata") if isinstance(data, dict) else None
    cid = meta.get("id") if isinstance(meta, dict) else None
    return cid if isinstance(cid, str) and cid else path.stem


def status_from_bundle(bundle: Bundle) -> tuple[Status, list[str], list[str]]:
    """(status, reasons it is not higher, falsified ship-blocking ids)."""
    ship = [f for f in bundle.falsifiers if f.ship_blocking]
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


def assess(
    evidence_dir: Path, contract_path: Path, contract_id: str | None = None, root: Path | None = None
) -> Assessment:
    cid = contract_id or contract_id_of(contract_path)
    rejected: list[BundleReport] = []
    for path in reversed(find_bundles(evidence_dir / cid)):  # run ids sort by time: newest first
        report = verify_bundle(path, root, contract_file=contract_path)
        if not report.ok or report.bundle is None:
            rejected.append(report)
            continue
        status, reasons, falsified = status_from_bundle(report.bundle)
        return Assessment(status, path, report.bundle, reasons, falsified, rejected)
    why = "no evidence" if not rejected else f"no verified, current bundle ({len(rejected)} rejected)"
    return Assessment(Status.DRAFT, None, None, [why], [], rejected)


def backing_status(evidence_dir: Path, loaded_contract: HasPath | Path) -> tuple[Status, Path | None]:
    """The highest status the newest verified, non-stale bundle supports, and that bundle."""
    path = loaded_contract if isinstance(loaded_contract, Path) else Path(loaded_contract.path)
    contract = getattr(loaded_contract, "contract", None)
    cid = getattr(getattr(contract, "metadata", None), "id", None)
    result = assess(Path(evidence_dir), path, cid)
    return result.status, result.bundle_path
