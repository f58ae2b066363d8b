"""observations: every name an ``expect`` reads is a param or an observation its checker declares.

Checkers declare the observation names they return (``@checker(observes=[...])``), so a typo in a
predicate is caught here, statically, instead of as an ``error`` verdict hours into a run.
"""

from __future__ import annotations

from functools import lru_cache

from pv.cases import parametrized_names
from pv.checkers import CheckerBindingError
from pv.diagnostics import Severity
from pv.expr import ExprError, Expression, parse
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.rules import lint_rule, route

NAME = "observations"
# validate's tree-wide codes this gate reports
route("PV112", NAME)  # no-expect
E, W = Severity.ERROR, Severity.WARNING

OBSERVATION_UNKNOWN = lint_rule(
    NAME,
    "PVL301",
    "unknown-observation",
    E,
    "An expect predicate reads a name that nothing provides.",
    "Every name in `expect` must be a key of the falsifier's `params` or an observation the bound "
    "checker declares in `@checker(observes=[...])`. Otherwise the predicate fails with an `error` "
    "verdict at run time, usually after the expensive part of the measurement.",
    "Correct the name, add it to `params`, or declare it in the checker's `observes`.",
)
EXPECT_UNPARSABLE = lint_rule(
    NAME,
    "PVL302",
    "expect-unparsable",
    E,
    "An expect predicate does not parse.",
    "The predicate must be valid in pv's safe expression language; see PV109.",
    "Fix the expression at the reported column.",
)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Expression | ExprError:
    # A thousand contracts reuse a handful of predicates; parse each text once per process.
    try:
        return parse(text)
    except ExprError as exc:
        return exc


class ObservationsGate:
    name = NAME
    description = "every name in an expect predicate is a param or a declared observation"

    def run(self, ctx: GateContext) -> GateOutcome:
        out: list[Finding] = []
        predicates = checked = unbound = names_total = 0
        for item, contract in ctx.tree.valid():
            for i, f in enumerate(contract.falsification_tests):
                where = ("falsification_tests", i)
                # `aggregate:` reads the same names as `expect` (as per-case lists), and n_cases
                predicates_here = [
                    (key, text) for key, text in (("expect", f.expect), ("aggregate", f.aggregate)) if text
                ]
                if not predicates_here:
                    continue  # a bound checker without an expect is validate's PV112, routed to this gate
                predicates += len(predicates_here)
                for key, text in predicates_here:
                    parsed = _parse(text)
                    if isinstance(parsed, ExprError):
                        out.append(
                            finding(
                                self.name,
                                EXPECT_UNPARSABLE,
                                item,
                                (*where, key),
                                f"{f.id}: {key} does not parse: {parsed.message}",
                                subject=f.id,
                            )
                        )
                        continue
                    spec = ctx.checkers.resolve(f.check) if f.check else None
                    if spec is None or isinstance(spec, CheckerBindingError):
                        unbound += 1  # binding reports it; without a spec there is nothing to compare
                        continue
                    checked += 1
                    known = set(f.params) | set(parametrized_names(f)) | set(spec.observes)
                    known |= {"n_cases"} if key == "aggregate" else set()
                    names_total += len(parsed.names)
                    for name in sorted(parsed.names - known):
                        out.append(
                            finding(
                                self.name,
                                OBSERVATION_UNKNOWN,
                                item,
                                (*where, key),
                                f"{f.id}: {key} reads {name!r}, which is neither a param nor an observation of "
                                f"{f.check}",
                                subject=f.id,
                                hint=f"{f.check} observes: {', '.join(spec.observes) or '(nothing)'}",
                            )
                        )
        summary = f"{plural(predicates, 'predicate')}, {checked} checked against their checker"
        if unbound:
            summary += f", {unbound} unbound (not checked)"
        return GateOutcome(
            summary, {"predicates": predicates, "checked": checked, "unbound": unbound, "names": names_total}, out
        )
