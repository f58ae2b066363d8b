"""validate: everything ``pv validate`` checks, with its tree-wide findings handed to their gates.

``pv validate`` also checks a few things across files (duplicate ids, depends_on, obligation
references, checker packages).  In lint those belong to the named gates (duplicates, references,
coverage, binding) so that each of those gates can fail on its own instead of being skipped
behind a failed validate; the diagnostics themselves still come from validate, unchanged.
"""

from __future__ import annotations

import os

from pv import rules
from pv.diagnostics import Diagnostic
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, plural


def gate_of(diagnostic: Diagnostic) -> str:
    gate = rules.gate_of(diagnostic.code)  # the gate modules route the codes they report
    if diagnostic.code == "PV124" and diagnostic.message.startswith("Kani harness"):
        return "references"  # the issue files Kani obligations under references, falsifiers under coverage
    return gate


def to_findings(ctx: GateContext, gate: str) -> list[Finding]:
    """validate's diagnostics that belong to ``gate``, as findings about their contract."""
    ids = {c.rel: c.id for c in ctx.tree.contracts}
    # validate names other files by the path it was given; lint gives it absolute paths, and a
    # fingerprint must not depend on where the checkout lives
    root = str(ctx.config.root.resolve()) + os.sep
    out = []
    for d in ctx.tree.validate_diagnostics:
        if gate_of(d) != gate:
            continue
        rel = ctx.config.relpath(d.path)
        f = Finding.from_diagnostic(gate, d, rel, ids.get(rel, ""))
        out.append(f.with_(message=f.message.replace(root, ""), hint=f.hint.replace(root, "")))
    return out


class ValidateGate:
    name = "validate"
    description = "everything pv validate checks in each file"

    def run(self, ctx: GateContext) -> GateOutcome:
        counts = dict(ctx.tree.validate_counts)
        files = len(ctx.tree.contracts)
        loaded = sum(1 for _ in ctx.tree.valid())
        counts.setdefault("files", files)
        counts["loaded"] = loaded
        counts["from_cache"] = files - ctx.tree.reloaded
        summary = f"{plural(files, 'file')}, {loaded} loaded"
        falsifiers = counts.get("falsifiers")
        if falsifiers is not None:
            summary += f", {plural(falsifiers, 'falsifier')}"
        if counts["from_cache"]:
            summary += f" ({counts['from_cache']} from the .pv/ cache)"
        return GateOutcome(summary, counts)
