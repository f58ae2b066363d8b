"""``pv report``: Markdown for a pull request, from the evidence in the working tree.

A summary line with denominators, a table per contract (status before and after, each
falsifier's verdict, its key observation against the substituted bound, duration) and what
changed against the newest bundle per contract at a git ref: a newly falsified claim, a bound
that moved, a timing that regressed by more than 20% (and by at least 50 ms, so that jitter on
millisecond checks is not reported).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.model import BUNDLE_FILE, FalsifierEntry
from pv.bundle.signing import KeyRing
from pv.cases import aggregate_env
from pv.evidence.status import Assessment, assess
from pv.evidence.verify import RUN_ID_RE
from pv.expr import format_value, parse
from pv.git import GitError, run_git
from pv.paths import shown
from pv.project import Project, ProjectContract
from pv.promote import PromoteError, decide

TIMING_RATIO = 1.2
TIMING_FLOOR_S = 0.05
_ICON = {"survived": "✅", "falsified": "❌", "error": "💥", "skipped": "⏭️", "inconclusive": "❔", "not_run": "·"}


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
    changes: list[str] = field(default_factory=list)
    entries: list[FalsifierEntry] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # every bundle a verdict came from


@dataclass
class Report:
    sections: list[Section]
    base: str | None = None
    trust: str = ""  # which keys evidence must be signed by, or that it is unauthenticated

    def counts(self) -> Counter[str]:
        c: Counter[str] = Counter()
        for s in self.sections:
            c["declared"] += max(s.declared, len(s.entries))
            for e in s.entries:
                c[e.verdict] += 1
                c["run"] += e.verdict in ("survived", "falsified", "error", "inconclusive")
                if e.mutant.verdict is not None:
                    c["mutants"] += 1
                    c["killed"] += e.mutant.killed is True
        return c

    def skip_reasons(self) -> Counter[str]:
        return Counter(
            e.skip_reason or "unspecified" for s in self.sections for e in s.entries if e.verdict == "skipped"
        )


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
        low, high = entry.get("interval", [None, None])
        figures = ", ".join(
            f"{k} {format_value(v, digits=REPORT_DIGITS)}" for k, v in sorted((entry.get("figures") or {}).items())
        )
        shown = f"{name} in [{format_value(low, digits=REPORT_DIGITS)}, {format_value(high, digits=REPORT_DIGITS)}]"
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


# --- the evidence at a git ref ---------------------------------------------------------------


def _git(root: Path, *args: str) -> str:
    try:
        return run_git(root, *args)
    except GitError as exc:
        raise ReportError(str(exc)) from None


def base_bundles(root: Path, evidence_dir: Path, ref: str) -> dict[str, dict[str, Any]]:
    """The newest bundle.json per contract in the tree at ``ref`` (unverified: history is read, not judged)."""
    _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    try:
        rel = evidence_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError as exc:
        raise ReportError(f"evidence folder {evidence_dir} is outside the repository {root}") from exc
    newest: dict[str, tuple[str, str]] = {}  # contract id -> (run id, path)
    for line in _git(root, "ls-tree", "-r", "--name-only", ref, "--", rel).splitlines():
        parts = line.split("/")
        if len(parts) >= 3 and parts[-1] == BUNDLE_FILE and RUN_ID_RE.match(parts[-2]):
            cid, run = parts[-3], parts[-2]
            if run > newest.get(cid, ("", ""))[0]:
                newest[cid] = (run, line)
    out: dict[str, dict[str, Any]] = {}
    for cid, (_, path) in newest.items():
        try:
            out[cid] = json.loads(_git(root, "show", f"{ref}:{path}"))
        except (ReportError, json.JSONDecodeError):
            continue
    return out


def changes(now: list[FalsifierEntry], base: dict[str, Any]) -> list[str]:
    found: list[str] = []
    before = {f.get("id"): f for f in base.get("falsifiers", []) if isinstance(f, dict)}
    for e in now:
        b = before.get(e.id)
        if b is None:
            found.append(f"{e.id}: new falsifier")
            continue
        if e.verdict == "falsified" and b.get("verdict") != "falsified":
            found.append(f"{e.id}: newly falsified (was {b.get('verdict')})")
        elif b.get("verdict") == "falsified" and e.verdict == "survived":
            found.append(f"{e.id}: no longer falsified")
        if e.expect and b.get("expect") and e.expect != b.get("expect"):
            found.append(f"{e.id}: bound moved: `{b.get('expect')}` -> `{e.expect}`")
        raw = b.get("duration_s")
        old = float(raw) if isinstance(raw, int | float) else 0.0
        ran = {"survived", "falsified"}
        comparable = old > 0 and e.verdict in ran and b.get("verdict") in ran
        if comparable and e.duration_s > old * TIMING_RATIO and e.duration_s - old >= TIMING_FLOOR_S:
            found.append(f"{e.id}: timing regressed {old:.2f}s -> {e.duration_s:.2f}s (+{e.duration_s / old - 1:.0%})")
    return found


# --- building and rendering --------------------------------------------------------------------


def _rel(path: Path | None, root: Path) -> str | None:
    return shown(path, root) if path is not None else None


def _declared_count(current: ProjectContract) -> int:
    tests = current.data.get("falsification_tests") if current.data else None
    return len(tests) if isinstance(tests, list) else 0


def build(project: Project, contracts: list[Path], base: str | None = None, keys: KeyRing | None = None) -> Report:
    """One section per contract in ``contracts``, each read once through ``project``."""
    evidence_dir, root = project.config.evidence, project.root
    at_base = base_bundles(root, evidence_dir, base) if base else {}
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
            if cid in at_base:
                section.changes = changes(section.entries, at_base[cid])
        sections.append(section)
    return Report(sections, base, project.config.trust_statement())


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary_line(report: Report) -> str:
    c = report.counts()
    reasons = report.skip_reasons()
    skipped = f"{c['skipped']} skipped"
    if reasons:
        skipped += " (" + ", ".join(f"{r} ×{n}" for r, n in sorted(reasons.items())) + ")"
    with_evidence = sum(1 for s in report.sections if s.bundle)
    return (
        f"**pv**: {len(report.sections)} contracts ({with_evidence} with current evidence) · "
        f"{c['declared']} falsifiers declared, {c['run']} run: {c['survived']} survived, "
        f"{c['falsified']} falsified, {c['error']} errors, {c['inconclusive']} inconclusive · {skipped} · "
        f"{c['not_run']} not run · "
        f"mutants killed {c['killed']}/{c['mutants']}"
    )


def render_markdown(report: Report) -> str:
    lines = ["## pv evidence report", "", summary_line(report), ""]
    if report.trust:
        lines += [f"_{_cell(report.trust[:1].upper() + report.trust[1:])}._", ""]
    for s in report.sections:
        moved = f"{s.before} → **{s.after}**" if s.before != s.after else s.after
        lines += [f"### `{s.contract_id}` — {moved}", ""]
        if s.sources:
            shown = ", ".join(f"`{b}`" for b in s.sources)
            lines.append(f"{_cell(s.reason)}; evidence: {shown}")
        else:
            lines.append(f"No current evidence: {_cell(s.reason)}")
        lines.append("")
        if s.rows:
            lines += [
                "| falsifier | ship-blocking | verdict | key observation | bound | duration | note | from run |",
                "|---|---|---|---|---|---:|---|---|",
            ]
            for r in s.rows:
                lines.append(
                    f"| `{r.id}` | {'yes' if r.ship_blocking else 'no'} | {_ICON.get(r.verdict, '')} {r.verdict} | "
                    f"{_cell(r.observation)} | {'`' + _cell(r.bound) + '`' if r.bound else ''} | "
                    f"{r.duration_s:.2f}s | {_cell(r.note)} | `{r.source}` |"
                )
            lines.append("")
        if report.base:
            if s.changes:
                lines += [f"Changes against `{report.base}`:", ""] + [f"- {_cell(c)}" for c in s.changes] + [""]
            else:
                lines += [f"No changes against `{report.base}`.", ""]
    return "\n".join(lines).rstrip() + "\n"
