"""falsifiability: every ship-blocking falsifier names a mutant that exists in a fault registry.

A falsifier that no planted defect can make fail proves nothing; the mutant is how the harness
shows that the check has teeth.
"""

from __future__ import annotations

import pv.lint.codes as codes
from pv.faults import resolve_mutant
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural


class FalsifiabilityGate:
    name = "falsifiability"
    description = "every ship-blocking falsifier names a mutant that resolves"

    def run(self, ctx: GateContext) -> GateOutcome:
        allowed = ctx.config.mutant_packages
        out: list[Finding] = []
        resolved: dict[str, str | None] = {}  # mutant ref -> error text, None when it resolves
        blocking = with_mutant = ok = 0
        for item, contract in ctx.tree.valid():
            for i, f in enumerate(contract.falsification_tests):
                if not f.ship_blocking:
                    continue
                blocking += 1
                where = ("falsification_tests", i)
                if not f.mutant:
                    out.append(
                        finding(
                            self.name,
                            codes.MUTANT_MISSING,
                            item,
                            (*where, "ship_blocking"),
                            f"ship-blocking {f.id} names no mutant, so nothing shows it can fail",
                            subject=f.id,
                            hint="add mutant: module:fault naming a registered planted defect",
                        )
                    )
                    continue
                with_mutant += 1
                if f.mutant not in resolved:
                    try:
                        resolve_mutant(f.mutant, allowed)
                        resolved[f.mutant] = None
                    except LookupError as exc:
                        resolved[f.mutant] = str(exc)
                error = resolved[f.mutant]
                if error is None:
                    ok += 1
                    continue
                out.append(
                    finding(
                        self.name,
                        codes.MUTANT_UNRESOLVED,
                        item,
                        (*where, "mutant"),
                        f"{f.id}: mutant {f.mutant} does not resolve: {error}",
                        subject=f.id,
                        hint="name a fault registered in the module's FAULTS registry",
                    )
                )
        summary = f"{plural(blocking, 'ship-blocking falsifier')}, {with_mutant} with a mutant, {ok} resolved"
        return GateOutcome(summary, {"ship_blocking": blocking, "with_mutant": with_mutant, "resolved": ok}, out)
