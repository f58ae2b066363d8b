"""falsifiability: every ship-blocking falsifier names a mutant that exists in a fault registry.

A falsifier that no planted defect can make fail proves nothing; the mutant is how the harness
shows that the check has teeth.
"""

from __future__ import annotations

from pv.diagnostics import Severity
from pv.faults import resolve_mutant
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.rules import lint_rule

NAME = "falsifiability"
E, W = Severity.ERROR, Severity.WARNING

MUTANT_MISSING = lint_rule(
    NAME,
    "PVL401",
    "no-mutant",
    E,
    "A ship-blocking falsifier names no mutant.",
    "Every falsifier must be able to fail. The mutant is a planted defect the harness switches on to "
    "show that the checker then reports `falsified`; a ship-blocking falsifier without one may be "
    "vacuous and still block or pass a release.",
    "Add `mutant: module:fault` naming a fault registered in the system's FAULTS registry.",
)
MUTANT_UNRESOLVED = lint_rule(
    NAME,
    "PVL402",
    "mutant-unresolved",
    E,
    "A falsifier's mutant is not in any fault registry.",
    "The `mutant:` module does not import, exposes no `FAULTS` registry, or its registry has no fault "
    "of that name, so the mutant run could not happen.",
    "Correct the fault name (see the registry's names) or register the fault.",
)


class FalsifiabilityGate:
    name = NAME
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
                            MUTANT_MISSING,
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
                        MUTANT_UNRESOLVED,
                        item,
                        (*where, "mutant"),
                        f"{f.id}: mutant {f.mutant} does not resolve: {error}",
                        subject=f.id,
                        hint="name a fault registered in the module's FAULTS registry",
                    )
                )
        summary = f"{plural(blocking, 'ship-blocking falsifier')}, {with_mutant} with a mutant, {ok} resolved"
        return GateOutcome(summary, {"ship_blocking": blocking, "with_mutant": with_mutant, "resolved": ok}, out)
