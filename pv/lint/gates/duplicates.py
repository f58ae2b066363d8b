"""duplicates: contract ids, file stems and FALSIFY ids are unique across the tree.

Duplicate ids are found by ``pv validate`` (PV120-PV123) and reported under this gate; what is
added here is the file-stem check, which catches two files named alike in different folders even
when neither declares an id.
"""

from __future__ import annotations

from collections import defaultdict

from pv.diagnostics import Severity
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.lint.tree import LintContract
from pv.rules import lint_rule, route

NAME = "duplicates"
# validate's tree-wide codes this gate reports
route("PV120", NAME)  # duplicate-contract-id
route("PV121", NAME)  # duplicate-falsify-id
route("PV122", NAME)  # duplicate-obligation-id
route("PV123", NAME)  # duplicate-kani-id
E, W = Severity.ERROR, Severity.WARNING

DUPLICATE_STEM = lint_rule(
    NAME,
    "PVL902",
    "duplicate-file-stem",
    E,
    "Two contract files share a file stem.",
    "The file stem is the contract's id for evidence and `depends_on`; two files with the same stem "
    "in different folders collide even when only one declares the id.",
    "Rename one of the files (and its metadata.id).",
)


class DuplicatesGate:
    name = NAME
    description = "contract ids, file stems and FALSIFY ids are unique"

    def run(self, ctx: GateContext) -> GateOutcome:
        out: list[Finding] = []
        stems: dict[str, list[LintContract]] = defaultdict(list)
        for item in ctx.tree.contracts:
            stems[item.stem].append(item)
        for stem, items in sorted(stems.items()):
            if len(items) < 2:
                continue
            first = items[0]
            for other in items[1:]:
                out.append(
                    finding(
                        self.name,
                        DUPLICATE_STEM,
                        other,
                        (),
                        f"file stem {stem!r} is also used by {first.rel}",
                        subject=stem,
                    )
                )
        ids = {c.id for c in ctx.tree.contracts}
        falsifiers = sum(len(c.falsification_tests) for _, c in ctx.tree.valid())
        distinct_falsifiers = len({f.id for _, c in ctx.tree.valid() for f in c.falsification_tests})
        summary = (
            f"{plural(len(ctx.tree.contracts), 'contract')}, {len(ids)} distinct ids, "
            f"{plural(falsifiers, 'falsifier')}, {distinct_falsifiers} distinct"
        )
        return GateOutcome(
            summary,
            {
                "contracts": len(ctx.tree.contracts),
                "distinct_ids": len(ids),
                "stems": len(stems),
                "falsifiers": falsifiers,
                "distinct_falsifiers": distinct_falsifiers,
            },
            out,
        )
