"""Each contract as the review's head sees it: its status before and after (``pv promote``'s
decision) and every falsifier's counting verdict, with its key observation written into its bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.model import FalsifierEntry
from pv.bundle.signing import KeyRing
from pv.cases import aggregate_env
from pv.evidence.status import Assessment, assess
from pv.expr import format_value, parse
from pv.paths import shown
from pv.project import Project, ProjectContract
from pv.promote import PromoteError, decide


class ReportError(Exception):
    """The report cannot be made (an unknown git ref); exit 2."""


@dataclass
class Row:
    id: str
    ship_blocking: bool
    verdict: str
    observation: str
    bound: str
    duration_s: float
    note: str = ""
    source: str = ""  # the run id of the bundle this verdict came from


@dataclass
class Section:
    contract_id: str
    path: str
    before: str
    after: str
    bundle: str | None
    reason: str
    declared: int = 0
    rows: list[Row] = field(default_factory=list)
    entries: list[FalsifierEntry] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # every bundle a verdict came from


@dataclass
class Report:
    sections: list[Section]
    trust: str = ""  # which keys evidence must be signed by, or that it is unauthenticated


REPORT_DIGITS = 4  # significant digits of a float in the review table; bundles keep every digit


def observation_and_bound(entry: FalsifierEntry) -> tuple[str, str]:
    """The observation that decides the verdict (the failing clause's, else the one closest to its
    bound) and the expect with values written in, floats rounded to :data:`REPORT_DIGITS`.

    A parametrized falsifier's verdict is its aggregate's: how many cases held, and the
    ``aggregate:`` predicate (if any) with the per-case values written in."""
    if entry.cases:
        held = sum(c.verdict == "survived" for c in entry.cases)
        env = {**aggregate_env([c.params for c in entry.cases]), **entry.observations}
        _, bound = _bound(entry.aggregate, env, entry.observations, summarise=True)
        return f"{held}/{len(entry.cases)} cases survived", bound
    return _bound(entry.expect, {**entry.params, **entry.observations}, entry.observations, entry.verdict)


def _bound(
    text: str | None,
    env: dict[str, Any],
    observations: dict[str, Any],
    verdict: str = "survived",
    summarise: bool = False,
) -> tuple[str, str]:
    if not text:
        return "", ""
    try:
        expr = parse(text)
    except Exception:  # an expect that no longer parses is shown as written
        return "", text
    if verdict in ("not_run", "skipped") or not observations:
        return "", text
    key = expr.deciding_name(env, observations.keys())
    observation = f"{key} = {format_value(observations[key], digits=REPORT_DIGITS)}" if key else ""
    try:
        bound = expr.substitute(env, digits=REPORT_DIGITS, summarise=summarise)
    except Exception:
        bound = text
    return observation, bound


def noise_note(noise: dict[str, Any]) -> str:
    """``inconclusive: cv in [0.01, 0.09] (reference_cv 0.02, loadavg_1m 3.1)``: what left it undecided."""

    parts = []
    for name, entry in sorted(noise.items()):
        interval = entry.get("interval")
        figures = ", ".join(
            f"{k} {format_value(v, digits=REPORT_DIGITS)}" for k, v in sorted((entry.get("figures") or {}).items())
        )
        shown = name  # an interval the bundle does not give is not written as [None, None]
        if isinstance(interval, list) and len(interval) == 2:
            low, high = (format_value(v, digits=REPORT_DIGITS) for v in interval)
            shown = f"{name} in [{low}, {high}]"
        parts.append(shown + (f" ({figures})" if figures else ""))
    return "inconclusive: " + ("; ".join(parts) if parts else "the noise left the bound undecided")


def _rows(entry: FalsifierEntry, source: str = "") -> list[Row]:
    """The falsifier's row, then one row per case of a parametrized falsifier."""
    observation, bound = observation_and_bound(entry)
    note = entry.skip_reason or ""
    if entry.mutant.declared and entry.verdict == "survived":
        m = entry.mutant
        note = "mutant not run" if m.verdict is None else ("mutant killed" if m.killed else "mutant SURVIVED: vacuous")
    elif entry.verdict == "inconclusive":
        note = noise_note(entry.noise)
    elif entry.verdict in ("falsified", "error", "not_run") and entry.message:
        note = entry.message.splitlines()[0]
    rows = [Row(entry.id, entry.ship_blocking, entry.verdict, observation, bound, entry.duration_s, note, source)]
    for c in entry.cases:
        observation, bound = _bound(entry.expect, {**c.params, **c.observations}, c.observations, c.verdict)
        note = c.skip_reason or (c.message.splitlines()[0] if c.message else "")
        rows.append(Row(f"{entry.id}[{c.id}]", entry.ship_blocking, c.verdict, observation, bound, c.duration_s, note))
    return rows


def _rel(path: Path | None, root: Path) -> str | None:
    return shown(path, root) if path is not None else None


def _declared_count(current: ProjectContract) -> int:
    tests = current.data.get("falsification_tests") if current.data else None
    return len(tests) if isinstance(tests, list) else 0


def build(project: Project, contracts: list[Path], keys: KeyRing | None = None) -> Report:
    """One section per contract in ``contracts``, each read once through ``project``."""
    evidence_dir, root = project.config.evidence, project.root
    sections: list[Section] = []
    for path in contracts:
        current = project.take(path)
        cid = current.id
        assessment: Assessment
        try:
            decision = decide(path, evidence_dir, root, keys, contract=current)
            before, after, reason = decision.current.value, decision.target.value, decision.reason
            assessment = decision.assessment or assess(evidence_dir, path, cid, root, keys=keys, current=current)
        except (PromoteError, OSError) as exc:
            before = after = "?"
            reason = str(exc)
            assessment = assess(evidence_dir, path, cid, root, keys=keys, current=current)
        if assessment.blocked:
            reason = "evidence blocked: " + "; ".join(assessment.blocked)
        elif not assessment.sources:
            # nothing current: say why, from the newest bundle there is
            if assessment.rejected:
                v = assessment.rejected[0]
                reason = f"newest bundle is {v.status}: " + "; ".join(p.format() for p in v.problems[:2])
            elif assessment.ignored:
                reason = "; ".join(sorted(set(assessment.ignored.values())))
            else:
                reason = "no evidence"
        section = Section(cid, _rel(path, root) or str(path), before, after, _rel(assessment.bundle_path, root), reason)
        section.declared = _declared_count(current)
        if assessment.sources:
            section.entries = assessment.entries
            section.rows = [row for src in assessment.sources.values() for row in _rows(src.entry, src.run_id)]
            section.sources = sorted({_rel(src.bundle_path, root) or "" for src in assessment.sources.values()})
        sections.append(section)
    return Report(sections, project.config.trust_statement())
