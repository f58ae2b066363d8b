"""binding: every falsifier names a registered checker that imports; no checker is orphaned."""

from __future__ import annotations

from pv.cases import parametrized_names
from pv.checkers import CheckerBindingError, discover, in_packages, unaccepted_params
from pv.diagnostics import Severity
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.rules import lint_rule, route

NAME = "binding"
# validate's tree-wide codes this gate reports
route("PV111", NAME)  # checker-outside-packages
route("PV127", NAME)  # param-named-like-fixture
E, W = Severity.ERROR, Severity.WARNING

CHECK_MISSING = lint_rule(
    NAME,
    "PVL201",
    "no-checker",
    W,
    "A falsifier names no checker.",
    "Without `check:` a falsifier cannot run: it is documentation, not a test, and no evidence can "
    "ever back it. Contracts in the Rust dialect start this way; the binding is added later. It is a "
    "warning by default and an error with `--strict-test-binding`.",
    "Add `check: package.module:function` naming a `@pv.checker` function.",
)
CHECK_UNRESOLVED = lint_rule(
    NAME,
    "PVL202",
    "checker-unresolved",
    E,
    "A falsifier's checker does not import or is not registered.",
    "The `check:` reference names a module that fails to import, a function that does not exist, or "
    "a function not decorated with `@pv.checker`. The falsifier could only ever be an `error` verdict, "
    "so this is an error, with the closest registered checker suggested when one is near.",
    "Fix the module path or function name (see the suggestion), or decorate the function with "
    "`@pv.checker(observes=[...])`.",
)
CHECK_ORPHAN = lint_rule(
    NAME,
    "PVL203",
    "checker-orphan",
    W,
    "A checker is registered for FALSIFY ids no contract declares.",
    "`@checker(ids=[...])` records which falsifiers a checker was written for. When none of the "
    "contracts declares such an id any more, the checker is dead code, or a contract lost a falsifier "
    "by accident.",
    "Restore the falsifier in its contract, or drop the id from the checker's `ids`.",
)
CHECK_PACKAGE_BROKEN = lint_rule(
    NAME,
    "PVL204",
    "checker-package-broken",
    W,
    "A checker package fails to import.",
    "lint imports every module of the configured checker packages to find orphaned checkers; a module "
    "that fails to import will also fail every falsifier bound to it.",
    "Fix the import error, or correct `[tool.pv] checker_packages` / `--checker-package`.",
)
CHECK_PARAMS = lint_rule(
    NAME,
    "PVL205",
    "checker-params",
    E,
    "A falsifier's params name a parameter its checker does not take.",
    "Every key of `params:` is passed to the checker by keyword (except `seed`, which the harness "
    "consumes). A key the checker's signature cannot take would make the falsifier an `error` verdict "
    "at run time; lint reads the signature without calling the checker and says so first.",
    "Rename the param to the checker's parameter (see the suggestion), or add it to the checker's signature.",
)


class BindingGate:
    name = NAME
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
                            CHECK_MISSING,
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
                            CHECK_UNRESOLVED,
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
                            CHECK_PARAMS,
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
                    code=CHECK_PACKAGE_BROKEN,
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
                    code=CHECK_ORPHAN,
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
