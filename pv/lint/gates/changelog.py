"""changelog: newest entry first and equal to metadata.version; versions only go up; dates parse."""

from __future__ import annotations

import datetime as dt
import re

from pv.diagnostics import Severity
from pv.diff import diff_contracts, previous_contracts
from pv.lint.findings import Finding
from pv.lint.gates.base import GateContext, GateOutcome, finding, plural
from pv.rules import lint_rule
from pv.semver import SemverKey, semver_key

NAME = "changelog"
E, W = Severity.ERROR, Severity.WARNING

CHANGELOG_TOP_MISMATCH = lint_rule(
    NAME,
    "PVL801",
    "changelog-version-mismatch",
    E,
    "The newest changelog entry is not `metadata.version`.",
    "The changelog is newest-first; its top entry must describe the version the contract declares, "
    "or a version bump went unrecorded (or the changelog was edited without a bump).",
    "Add a changelog entry for the new version at the top, or correct `metadata.version`.",
)
CHANGELOG_ORDER = lint_rule(
    NAME,
    "PVL802",
    "changelog-order",
    E,
    "Changelog versions do not strictly decrease down the list.",
    "Entries are newest first, so each version must be lower than the one above it; a repeated or "
    "out-of-order version makes the history ambiguous.",
    "Order entries newest first and give each one a distinct version.",
)
CHANGELOG_DATE = lint_rule(
    NAME,
    "PVL803",
    "changelog-date",
    E,
    "A changelog date is not an ISO date.",
    "Dates are `YYYY-MM-DD` so that they sort and parse everywhere.",
    "Write the date as, for example, `2026-11-21` (quoted).",
)
CHANGELOG_VERSION = lint_rule(
    NAME,
    "PVL804",
    "changelog-semver",
    E,
    "A changelog version is not semantic versioning.",
    "Changelog versions are compared with each other and with `metadata.version`; see PV104.",
    "Write the version as `MAJOR.MINOR.PATCH`.",
)
CHANGELOG_EMPTY = lint_rule(
    NAME,
    "PVL805",
    "changelog-empty",
    W,
    "The contract has no changelog.",
    "Without a changelog nobody can tell what a version bump changed, or whether evidence recorded "
    "against an older version still means anything.",
    "Add `metadata.changelog` with an entry for the current version, e.g. "
    '`changelog: [{version: 1.0.0, date: "2026-01-01", change: initial}]`; `pv promote` also writes one '
    "when it promotes, without making the evidence stale.",
)
VERSION_BUMP_TOO_SMALL = lint_rule(
    NAME,
    "PVL806",
    "version-bump-too-small",
    E,
    "The version did not bump enough for what changed since the last commit (or `--base REF`).",
    "Compared with the contract at git `HEAD`, or at `pv lint --base REF` (in pull-request CI, the "
    "target branch), when there is git history: removing a falsifier or "
    "loosening a bound needs a major bump, adding one a minor bump, rewording a patch bump; `pv diff "
    "--git HEAD` lists the changes. Status and changelog edits made by `pv promote` need no bump.",
    "Raise `metadata.version` (and the top changelog entry) to at least the bump `pv diff` reports.",
)

DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_date(text: str) -> dt.date | None:
    if not DATE_RE.match(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


class ChangelogGate:
    name = NAME
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
                        CHANGELOG_EMPTY,
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
                        CHANGELOG_TOP_MISMATCH,
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
                            CHANGELOG_VERSION,
                            item,
                            (*where, "version"),
                            f"changelog version {entry.version!r} is not semantic versioning",
                        )
                    )
                elif previous is not None and not key < previous[1] and entry.evidence is None:
                    out.append(
                        finding(
                            self.name,
                            CHANGELOG_ORDER,
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
                            CHANGELOG_DATE,
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
                        VERSION_BUMP_TOO_SMALL,
                        item,
                        ("metadata", "version"),
                        f"{diff.verdict()} against {ref}{why}",
                        hint=f"`pv diff --git {ref}` lists every change and the bump it needs",
                    )
                )
        return out
