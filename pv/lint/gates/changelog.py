"""changelog: newest entry first and equal to metadata.version; versions only go up; dates parse."""

from __future__ import annotations

import datetime as dt
import re

import pv.lint.codes as codes
from pv.diagnostics import Severity
from pv.diff import diff_contracts, previous_contracts
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.semver import SemverKey, semver_key

DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_date(text: str) -> dt.date | None:
    if not DATE_RE.match(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


class ChangelogGate:
    name = "changelog"
    description = "top changelog entry is metadata.version; versions strictly decrease down the list"

    def run(self, ctx: GateContext) -> GateOutcome:
        out: list[Finding] = []
        contracts = entries = empty = 0
        for item, contract in ctx.tree.valid():
            contracts += 1
            meta = contract.metadata
            log = meta.changelog
            if not log:
                empty += 1
                out.append(
                    finding(
                        self.name,
                        codes.CHANGELOG_EMPTY,
                        item,
                        ("metadata",),
                        f"{item.id} has no changelog",
                        severity=Severity.WARNING,
                    )
                )
                continue
            entries += len(log)
            if log[0].version != meta.version:
                out.append(
                    finding(
                        self.name,
                        codes.CHANGELOG_TOP_MISMATCH,
                        item,
                        ("metadata", "changelog", 0, "version"),
                        f"newest changelog entry is {log[0].version} but metadata.version is {meta.version}",
                    )
                )
            previous: tuple[str, SemverKey] | None = None
            for i, entry in enumerate(log):
                where = ("metadata", "changelog", i)
                key = semver_key(entry.version)
                if key is None:
                    out.append(
                        finding(
                            self.name,
                            codes.CHANGELOG_VERSION,
                            item,
                            (*where, "version"),
                            f"changelog version {entry.version!r} is not semantic versioning",
                        )
                    )
                elif previous is not None and not key < previous[1] and entry.evidence is None:
                    out.append(
                        finding(
                            self.name,
                            codes.CHANGELOG_ORDER,
                            item,
                            (*where, "version"),
                            f"changelog entry {entry.version} follows {previous[0]}; entries are newest first, "
                            "so versions must strictly decrease down the list",
                        )
                    )
                # `pv promote` records a status change under the unchanged version, naming its bundle
                if key is not None and entry.evidence is None:
                    previous = (entry.version, key)
                if parse_date(entry.date) is None:
                    out.append(
                        finding(
                            self.name,
                            codes.CHANGELOG_DATE,
                            item,
                            (*where, "date"),
                            f"changelog date {entry.date!r} (version {entry.version}) is not YYYY-MM-DD",
                        )
                    )
        out.extend(self._bumps(ctx))
        summary = f"{plural(contracts, 'contract')}, {plural(entries, 'entry', 'entries')}"
        if empty:
            summary += f", {empty} without a changelog"
        return GateOutcome(summary, {"contracts": contracts, "entries": entries, "without_changelog": empty}, out)

    def _bumps(self, ctx: GateContext) -> list[Finding]:
        """A version that did not bump enough for what changed since git ``ctx.base_ref`` (no git: none)."""
        valid = list(ctx.tree.valid())
        ref = ctx.base_ref
        previous = previous_contracts([item.path for item, _ in valid], ref)
        out: list[Finding] = []
        for item, contract in valid:
            before = previous.get(item.path.resolve())
            if before is None:
                continue
            diff = diff_contracts(before, contract, item.rel)
            if not diff.sufficient:
                worst = max(diff.changes, key=lambda c: c.bump, default=None)
                why = f" ({worst.subject}: {worst.detail})" if worst is not None else ""
                out.append(
                    finding(
                        self.name,
                        codes.VERSION_BUMP_TOO_SMALL,
                        item,
                        ("metadata", "version"),
                        f"{diff.verdict()} against {ref}{why}",
                        hint=f"`pv diff --git {ref}` lists every change and the bump it needs",
                    )
                )
        return out
