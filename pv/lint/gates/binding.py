"""binding: every falsifier names a registered checker that imports; no checker is orphaned."""

from __future__ import annotations

import pv.lint.codes as codes
from pv.cases import parametrized_names
from pv.checkers import CheckerBindingError, discover, in_packages, unaccepted_params
from pv.diagnostics import Severity
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural


class BindingGate:
    name = "binding"
    description = "every falsifier's check: resolves to a registered checker"

    def run(self, ctx: GateContext) -> GateOutcome:
        # A falsifier with no check: at all may be ahead of its checkers (written first, bound
        # later, or a Rust-dialect contract): a warning unless --strict-test-binding.  A check:
        # that names something wrong, or params the checker cannot take, is always an error.
        severity = Severity.ERROR if ctx.strict_test_binding else Severity.WARNING
        out: list[Finding] = []
        total = bound = unbound = 0
        declared_ids: set[str] = set()
        for item, contract in ctx.tree.valid():
            for i, f in enumerate(contract.falsification_tests):
                declared_ids.add(f.id)
                total += 1
                where = ("falsification_tests", i)
                if not f.check:
                    unbound += 1
                    out.append(
                        finding(
                            self.name,
                            codes.CHECK_MISSING,
                            item,
                            where,
                            f"{f.id} names no checker (no check:)",
                            subject=f.id,
                            hint="add check: module:function naming a @pv.checker function",
                            severity=severity,
                        )
                    )
                    continue
                spec = ctx.checkers.resolve(f.check)
                if isinstance(spec, CheckerBindingError):
                    unbound += 1
                    if not in_packages(f.check.partition(":")[0], ctx.config.checker_packages):
                        continue  # validate's PV111 (an error) already says so, attached to this gate
                    out.append(
                        finding(
                            self.name,
                            codes.CHECK_UNRESOLVED,
                            item,
                            (*where, "check"),
                            f"{f.id}: {spec}",
                            subject=f.id,
                            hint=f"checker packages: {', '.join(ctx.config.checker_packages)}",
                            severity=Severity.ERROR,
                        )
                    )
                    continue
                bound += 1
                axes = parametrized_names(f)
                for key, hint in unaccepted_params(
                    spec.func, [*f.params, *(a for a in axes if a not in f.params)]
                ).items():
                    section = "parametrize" if key in axes and isinstance(f.parametrize, dict) else "params"
                    out.append(
                        finding(
                            self.name,
                            codes.CHECK_PARAMS,
                            item,
                            (*where, section, key) if section == "parametrize" or key in f.params else where,
                            f"{f.id}: param {key!r} is not a parameter of {f.check}{hint}",
                            subject=f.id,
                            severity=Severity.ERROR,
                        )
                    )
        orphans = self._orphans(ctx, declared_ids, severity, out)
        summary = f"{plural(total, 'falsifier')}, {bound} bound"
        if unbound:
            summary += f", {unbound} unbound"
        if orphans:
            summary += f", {plural(orphans, 'orphan checker')}"
        return GateOutcome(summary, {"falsifiers": total, "bound": bound, "unbound": unbound, "orphans": orphans}, out)

    def _orphans(self, ctx: GateContext, declared: set[str], severity: Severity, out: list[Finding]) -> int:
        """Checkers written for FALSIFY ids that no contract declares any more."""
        try:
            specs = discover(ctx.config.checker_packages)
        except CheckerBindingError as exc:
            out.append(
                Finding(
                    gate=self.name,
                    code=codes.CHECK_PACKAGE_BROKEN,
                    severity=severity,
                    message=str(exc),
                    path=ctx.config.relpath(ctx.config.pyproject or ctx.config.root),
                    subject=",".join(ctx.config.checker_packages),
                    hint="fix the import error, or set [tool.pv] checker_packages",
                )
            )
            return 0
        orphans = 0
        for ref in sorted(specs):
            spec = specs[ref]
            missing = [i for i in spec.ids if i not in declared]
            if not missing:
                continue
            orphans += 1
            code = getattr(spec.func, "__code__", None)
            path = ctx.config.relpath(code.co_filename) if code else ref
            out.append(
                Finding(
                    gate=self.name,
                    code=codes.CHECK_ORPHAN,
                    severity=Severity.WARNING,
                    message=f"checker {ref} is registered for {', '.join(missing)}, which no contract declares",
                    path=path,
                    line=code.co_firstlineno if code else 0,
                    col=1 if code else 0,
                    subject=ref,
                    hint="declare the falsifier in a contract, or drop the id from @checker(ids=...)",
                )
            )
        return orphans
