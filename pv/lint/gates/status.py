"""status: every contract's status is exactly what its verified evidence supports.

The rule is :func:`pv.evidence.status.status_mismatch`, the one ``pv promote --check`` applies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pv.config import ConfigError
from pv.diagnostics import Severity
from pv.evidence.status import assess, status_mismatch
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.model import Status
from pv.rules import lint_rule

NAME = "status"
E, W = Severity.ERROR, Severity.WARNING

STATUS_UNBACKED = lint_rule(
    NAME,
    "PVL701",
    "status-unbacked",
    E,
    "A contract's status is above what its verified evidence backs.",
    "Status comes from evidence, never from a hand edit. The newest verified, non-stale bundle for the "
    "contract supports a lower status than the one written in `metadata.status` (or the evidence "
    "was recorded against other contract bytes).",
    "Run the falsifiers and `pv promote`, or set the status back to what the evidence supports.",
)
STATUS_NO_EVIDENCE = lint_rule(
    NAME,
    "PVL702",
    "status-without-evidence",
    E,
    "A status above DRAFT has no evidence at all.",
    "Until a verified evidence bundle exists for a contract, its only honest status is DRAFT.",
    "Set `metadata.status: DRAFT`, or record evidence and promote with `pv promote`.",
)
STATUS_BEHIND = lint_rule(
    NAME,
    "PVL703",
    "status-behind-evidence",
    E,
    "A contract's status is below what its verified evidence supports.",
    "The status must be exactly what the evidence supports, in both directions: the same rule as "
    "`pv promote --check`. A status left below its evidence hides a claim that has been shown to hold "
    "(and a status the evidence moved down must be written down too).",
    "Run `pv promote` and commit the status change it writes.",
)
STATUS_BLOCKED = lint_rule(
    NAME,
    "PVL705",
    "status-evidence-blocked",
    E,
    "A contract's evidence is blocked: the ledger or a bundle it records is broken.",
    "A bundle the ledger records that is gone, replaced, edited or out of its place, one that does "
    "not verify, or a ledger line git saw that is no longer there blocks the contract whatever "
    "status is declared: nothing falls back to an older verdict, so no status is backed, not even "
    "DRAFT's (docs/evidence.md).",
    "`pv evidence verify` names each cause: restore what the ledger records from git, or say a "
    "bundle lost by accident with `pv evidence forget RUN_ID --reason ...` and run the falsifiers again.",
)
STATUS_PENDING = lint_rule(
    NAME,
    "PVL704",
    "status-pending-this-change",
    W,
    "On a pull request, a status's evidence measured other code or contract bytes than the PR's.",
    "Evidence is bound to the code it measured. A pull request that edits a checker, the system "
    "under test or a contract leaves the protected branch's evidence stale for its own tree, and its "
    "own run is unsigned; neither backs a status, and neither says the claim is false. The protected "
    "branch's CI measures and signs the change after it merges (`pv lint --pr`).",
    "Nothing on the pull request; if CI on the protected branch then backs another status, `pv promote`.",
)

RANK: dict[Status, int] = {Status.DRAFT: 0, Status.ACTIVE_ALGORITHM_LEVEL: 1, Status.ACTIVE: 2}
# (evidence folder, contract path, contract id, trusted keys, the contract as the project read it)
# -> pv.evidence.status.Assessment
Assessor = Callable[[Path, Path, str, Any, Any], Any]


def _assess(evidence: Path, path: Path, contract_id: str, keys: Any, current: Any) -> Any:
    return assess(evidence, path, contract_id, keys=keys, current=current)


_LEFT_BEHIND = frozenset({"stale", "superseded", "untrusted"})


def _left_behind(found: Any) -> bool:
    """No verdict counts only because the evidence measured other bytes or is an unsigned run:
    nothing blocked, nothing current that says otherwise."""
    return (
        not found.blocked
        and not found.counted
        and bool(found.rejected)
        and all({p.kind for p in r.problems} <= _LEFT_BEHIND for r in found.rejected)
    )


class StatusGate:
    name = NAME
    description = "every status is exactly what verified evidence supports (DRAFT needs none)"

    def __init__(self, assessor: Assessor | None = None) -> None:
        self._assess = assessor or _assess

    def run(self, ctx: GateContext) -> GateOutcome:
        evidence = ctx.config.evidence
        out: list[Finding] = []
        contracts = claimed = backed = 0
        keys: Any = None
        keys_read = False
        for item, contract in ctx.tree.valid():
            contracts += 1
            declared = contract.metadata.status
            if declared is Status.RETIRED:  # out of service: it needs no evidence
                continue
            above = RANK.get(declared, 0) > 0
            claimed += above
            where = ("metadata", "status")
            if not (evidence / item.id).is_dir():
                if above:
                    out.append(
                        finding(
                            self.name,
                            STATUS_NO_EVIDENCE,
                            item,
                            where,
                            f"status {declared.value} but no evidence exists for {item.id}",
                            hint=f"evidence is looked for in {ctx.config.relpath(evidence / item.id)}/",
                        )
                    )
                continue
            if not keys_read:  # read once, and only when some evidence is to be judged
                try:
                    keys = ctx.config.key_ring()
                except ConfigError as exc:
                    out.append(finding(self.name, STATUS_UNBACKED, item, where, str(exc)))
                    break
                keys_read = True
            assert ctx.project is not None
            # the last gate to need the file: take it, so the project keeps no tree of contracts alive
            found = self._assess(evidence, item.path, item.id, keys, ctx.project.take(item.path))
            problem = status_mismatch(declared, found)
            if problem is None:
                backed += above
                continue
            if found.blocked:
                out.append(
                    finding(
                        self.name,
                        STATUS_BLOCKED,
                        item,
                        where,
                        problem,
                        hint="`pv evidence verify` names each cause; restore what the ledger records, or "
                        "`pv evidence forget RUN_ID --reason ...`",
                    )
                )
                continue
            if ctx.pull_request and _left_behind(found):
                out.append(
                    finding(
                        self.name,
                        STATUS_PENDING,
                        item,
                        where,
                        f"{problem}; this pull request's changes left the evidence behind",
                        hint="the protected branch's CI measures and signs the change after it merges",
                        severity=Severity.WARNING,
                    )
                )
                continue
            source = ctx.config.relpath(found.bundle_path) if found.bundle_path else "no verified, current bundle"
            higher = RANK.get(declared, 0) > RANK[found.status]
            out.append(
                finding(
                    self.name,
                    STATUS_UNBACKED if higher else STATUS_BEHIND,
                    item,
                    where,
                    problem,
                    hint=f"evidence: {source}; run the falsifiers and `pv promote`",
                )
            )
        summary = f"{plural(contracts, 'contract')}, {claimed} above DRAFT, {backed} backed by evidence"
        return GateOutcome(summary, {"contracts": contracts, "above_draft": claimed, "backed": backed}, out)
