"""``--format sarif``: SARIF 2.1.0 for code-scanning tools (GitHub code scanning among them).

Each finding is a ``result`` with its rule, level, a physical location relative to the
``%SRCROOT%`` base (the repository root), a ``partialFingerprints`` entry holding pv's
content fingerprint, and a ``baselineState`` from the ratchet (``new`` / ``unchanged``).
Findings forgiven by the baseline carry an external, accepted suppression.
"""

from __future__ import annotations

import json
from typing import Any

from pv import rules
from pv.lint.formats.json_report import tool_version
from pv.lint.runner import LintReport

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
FINGERPRINT_KEY = "pvFindingHash/v1"


def _rule(code: str) -> dict[str, Any]:
    r = rules.RULES.get(code)
    if r is None:
        return {"id": code, "shortDescription": {"text": code}}
    return {
        "id": code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.explanation},
        "help": {"text": f"{r.explanation}\n\nFix: {r.hint}"},
        "defaultConfiguration": {"level": "error" if r.severity.value == "error" else "warning"},
    }


def to_dict(report: LintReport) -> dict[str, Any]:
    findings = report.findings
    codes = sorted({f.code for f in findings})
    index = {c: i for i, c in enumerate(codes)}
    results: list[dict[str, Any]] = []
    for f in findings:
        physical: dict[str, Any] = {"artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"}}
        if f.line > 0:
            physical["region"] = {"startLine": f.line, "startColumn": max(f.col, 1)}
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error" if f.is_error else "warning",
            "message": {"text": f.message + (f" (hint: {f.hint})" if f.hint else "")},
            "locations": [{"physicalLocation": physical}],
            "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
            "baselineState": "new" if f.new else "unchanged",
            "properties": {"gate": f.gate, "subject": f.subject},
        }
        if f.baselined:
            result["suppressions"] = [
                {"kind": "external", "status": "accepted", "justification": "listed in the pv lint baseline"}
            ]
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "pv lint",
                "version": tool_version(),
                "rules": [_rule(c) for c in codes],
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": report.root.resolve().as_uri() + "/"}},
        "invocations": [
            {
                "executionSuccessful": True,
                "exitCode": report.exit_code,
            }
        ],
        "results": results,
        "properties": {
            "result": "PASS" if report.passed else "FAIL",
            "gates": [
                {"name": g.name, "state": g.state, "summary": g.summary, "duration_s": round(g.duration_s, 6)}
                for g in report.gates
            ],
        },
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(report: LintReport) -> str:
    return json.dumps(to_dict(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
