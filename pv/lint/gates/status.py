"""status: no contract claims a status above what its verified evidence backs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pv.lint import codes
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.model import Status

RANK: dict[Status, int] = {Status.DRAFT: 0, Status.ACTIVE_ALGORITHM_LEVEL: 1, Status.ACTIVE: 2}
BackingStatus = Callable[[Path, Path], tuple[Status, Path | None]]


def _backing_status() -> BackingStatus | None:
    try:
        from pv.evidence.status import backing_status
    except ImportError:  # a harness without the evidence package: no evidence can back anything
        return None
    return backing_status


class StatusGate:
    name = "status"
    description = "every status is backed by verified evidence (DRAFT needs none)"

    def __init__(self, backing: BackingStatus | None = None) -> None:
        self._backing = backing

    def run(self, ctx: GateContext) -> GateOutcome:
        backing = self._backing
        looked_up = backing is not None
        evidence = ctx.config.evidence
        out: list[Finding] = []
        contracts = claimed = backed = 0
        for item, contract in ctx.tree.valid():
            contracts += 1
            declared = contract.metadata.status
            # RETIRED takes a claim out of service; it needs no evidence, like DRAFT.
            if declared not in RANK or RANK[declared] == 0:
                continue
            claimed += 1
            where = ("metadata", "status")
            has_evidence = (evidence / item.id).is_dir()
            if has_evidence and not looked_up:
                # imported only when needed: most trees are mostly DRAFT, and it is not cheap
                backing, looked_up = _backing_status(), True
            if backing is None or not has_evidence:
                out.append(
                    finding(
                        self.name,
                        codes.STATUS_NO_EVIDENCE,
                        item,
                        where,
                        f"status {declared.value} but no evidence exists for {item.id}",
                        hint=f"evidence is looked for in {ctx.config.relpath(evidence / item.id)}/",
                    )
                )
                continue
            supported, bundle = backing(evidence, item.path)
            if RANK.get(supported, 0) >= RANK[declared]:
                backed += 1
                continue
            source = ctx.config.relpath(bundle) if bundle else "no verified bundle bound to these contract bytes"
            out.append(
                finding(
                    self.name,
                    codes.STATUS_UNBACKED,
                    item,
                    where,
                    f"status {declared.value} but the verified evidence backs only {supported.value}",
                    hint=f"evidence: {source}; run the falsifiers and `pv promote`",
                )
            )
        summary = f"{plural(contracts, 'contract')}, {claimed} above DRAFT, {backed} backed by evidence"
        return GateOutcome(summary, {"contracts": contracts, "above_draft": claimed, "backed": backed}, out)
