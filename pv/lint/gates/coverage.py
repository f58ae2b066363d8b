"""coverage: every proof obligation is covered by a falsifier; no falsifier cites an unknown one."""

from __future__ import annotations

from pv.diagnostics import Severity
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.rules import lint_rule, route

NAME = "coverage"
# validate's tree-wide codes this gate reports
route("PV124", NAME)  # unresolved-obligation (a Kani harness's goes to references)
E, W = Severity.ERROR, Severity.WARNING

OBLIGATION_UNCOVERED = lint_rule(
    NAME,
    "PVL501",
    "obligation-uncovered",
    E,
    "A proof obligation is covered by no falsifier.",
    "An obligation with an id that no falsifier cites (`obligation: ID`) is a claim nothing tests; "
    "its contract would look complete while one of its properties is never measured.",
    "Add a falsifier with `obligation:` set to the id, or remove the obligation.",
)


class CoverageGate:
    name = NAME
    description = "every proof obligation is covered by at least one falsifier"

    def run(self, ctx: GateContext) -> GateOutcome:
        out: list[Finding] = []
        obligations = covered = anonymous = 0
        # Obligation ids are unique across the tree (PV122), so a falsifier in any contract may
        # cover one.  A falsifier citing an unknown obligation is PV124, found by validate and
        # attached to this gate by the runner.
        cited = {f.obligation for _, c in ctx.tree.valid() for f in c.falsification_tests if f.obligation}
        for item, contract in ctx.tree.valid():
            for j, o in enumerate(contract.proof_obligations):
                obligations += 1
                if not o.id:
                    # The Rust dialect allows obligations without ids; nothing can cite them.
                    anonymous += 1
                    continue
                if o.id in cited:
                    covered += 1
                    continue
                out.append(
                    finding(
                        self.name,
                        OBLIGATION_UNCOVERED,
                        item,
                        ("proof_obligations", j, "id"),
                        f"obligation {o.id} is covered by no falsifier",
                        subject=o.id,
                        hint="add a falsifier with obligation: " + o.id,
                    )
                )
        summary = f"{plural(obligations, 'obligation')}, {covered} covered"
        if anonymous:
            summary += f", {anonymous} without an id (not checkable)"
        return GateOutcome(summary, {"obligations": obligations, "covered": covered, "without_id": anonymous}, out)
