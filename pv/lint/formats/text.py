"""Text output: the gate table, findings grouped by file, the summary and the result."""

from __future__ import annotations

from itertools import groupby

from pv.lint.findings import Finding
from pv.lint.runner import GateResult, LintReport

MARK = {"passed": "✓", "failed": "✗", "skipped": "-"}


def _gate_line(g: GateResult, name_width: int) -> str:
    mark = MARK[g.state]
    if g.state == "skipped":
        return f"  {mark} {g.name:<{name_width}}  {g.summary}"
    tally = []
    if g.errors:
        tally.append(f"{g.errors} error{'s' if g.errors != 1 else ''}")
    if g.warnings:
        tally.append(f"{g.warnings} warning{'s' if g.warnings != 1 else ''}")
    extra = f" — {', '.join(tally)}" if tally else ""
    return f"  {mark} {g.name:<{name_width}}  {g.summary}{extra}  ({g.duration_s:.2f}s)"


def _finding_line(f: Finding) -> str:
    tags = []
    if not f.is_error:
        tags.append("[warning]")
    if f.baselined:
        tags.append("[baseline]")
    elif f.new:
        tags.append("[NEW]")
    text = f.format()
    return f"{text} {' '.join(tags)}" if tags else text


def render(report: LintReport, *, show_baselined: bool = False, hints: bool = True) -> str:
    lines = [f"pv lint {report.target} ({report.contracts} contract file{'s' if report.contracts != 1 else ''})"]
    width = max((len(g.name) for g in report.gates), default=0)
    lines += [_gate_line(g, width) for g in report.gates]
    shown = [f for f in report.findings if show_baselined or not f.baselined]
    for path, group in groupby(shown, key=lambda f: f.path):
        lines += ["", path]
        for f in group:
            lines.append("  " + _finding_line(f))
            if hints and f.hint:
                lines.append(f"      hint: {f.hint}")
    lines.append("")
    lines.append(f"Summary: {report.errors} errors, {report.warnings} warnings, {report.new} new")
    if report.baseline is not None:
        if report.baseline_written:
            lines.append(f"Baseline: wrote {report.baselined} findings to {report.baseline}")
        else:
            fixed = f"; {report.baseline_fixed} fixed and removed from it" if report.baseline_fixed else ""
            lines.append(f"Baseline: {report.baselined} findings forgiven by {report.baseline}{fixed}")
    lines.append(f"Result: {'PASS' if report.passed else 'FAIL'}")
    return "\n".join(lines) + "\n"
