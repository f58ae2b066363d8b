"""``--format json``: the versioned report shape described by ``pv/schema/lint-report.schema.json``.

The version is bumped whenever a field is removed or changes meaning; new optional fields do not
bump it.  Findings are sorted by file and position; keys are written sorted.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from pv.lint.runner import LintReport

REPORT_SCHEMA = "pv-lint-report"
REPORT_VERSION = 1


def tool_version() -> str:
    try:
        return metadata.version("pv-harness")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def to_dict(report: LintReport) -> dict[str, Any]:
    baseline: dict[str, Any] | None = None
    if report.baseline is not None:
        baseline = {
            "path": str(report.baseline),
            "written": report.baseline_written,
            "forgiven": report.baselined,
            "fixed": report.baseline_fixed,
        }
    return {
        "schema": REPORT_SCHEMA,
        "version": REPORT_VERSION,
        "tool": {"name": "pv", "version": tool_version()},
        "target": report.target,
        "contracts": report.contracts,
        "options": {"strict": report.strict, "strict_test_binding": report.strict_test_binding},
        "gates": [
            {
                "name": g.name,
                "description": g.description,
                "state": g.state,
                "summary": g.summary,
                "counts": dict(sorted(g.counts.items())),
                "errors": g.errors,
                "warnings": g.warnings,
                "duration_s": round(g.duration_s, 6),
                "skip_reason": g.skip_reason or None,
            }
            for g in report.gates
        ],
        "findings": [f.to_dict() for f in report.findings],
        "summary": {
            "errors": report.errors,
            "warnings": report.warnings,
            "new": report.new,
            "baselined": report.baselined,
            "first_run": report.first_run,
        },
        "baseline": baseline,
        "result": "PASS" if report.passed else "FAIL",
        "exit_code": report.exit_code,
        "duration_s": round(report.duration_s, 6),
    }


def render(report: LintReport) -> str:
    return json.dumps(to_dict(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
