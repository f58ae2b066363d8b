"""references: depends_on names known contracts without a cycle; Kani harnesses cite real obligations."""

from __future__ import annotations

from pv.lint.gates.base import GateContext, GateOutcome, plural
from pv.rules import route

NAME = "references"
# validate's tree-wide codes this gate reports
route("PV125", NAME)  # unknown-dependency
route("PV126", NAME)  # dependency-cycle


class ReferencesGate:
    """Counts what it checked; the findings themselves (PV124 for Kani harnesses, PV125, PV126)
    come from ``pv validate``'s tree-wide pass and are attached by the runner."""

    name = NAME
    description = "depends_on resolves without cycles; Kani harness obligations resolve"

    def run(self, ctx: GateContext) -> GateOutcome:
        edges = harnesses = 0
        for _, contract in ctx.tree.valid():
            edges += len(contract.metadata.depends_on)
            harnesses += len(contract.kani_harnesses)
        summary = f"{plural(edges, 'dependency', 'dependencies')}, " + plural(
            harnesses, "Kani harness", "Kani harnesses"
        )
        return GateOutcome(summary, {"dependencies": edges, "kani_harnesses": harnesses})
