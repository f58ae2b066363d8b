"""GitHub Actions workflow commands: one ``::error``/``::warning`` annotation per finding.

Escaping follows the runner's rules: ``%``, CR and LF in the message; additionally ``:`` and
``,`` in property values, which would otherwise end the property.
"""

from __future__ import annotations

from pv.lint.runner import LintReport


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: LintReport) -> str:
    lines = []
    for f in report.findings:
        if f.baselined:
            continue  # forgiven findings do not annotate the pull request
        level = "error" if f.is_error else "warning"
        props = [f"file={_prop(f.path)}"]
        if f.line > 0:
            props.append(f"line={f.line}")
            if f.col > 0:
                props.append(f"col={f.col}")
        props.append(f"title={_prop(f.code + (' (new)' if f.new else ''))}")
        message = f"{f.code} {f.message}" + (f"\n{f.hint}" if f.hint else "")
        lines.append(f"::{level} {','.join(props)}::{_data(message)}")
    for g in report.gates:
        lines.append(f"{g.state:>7} {g.name}: {g.summary}")
    lines.append(f"Summary: {report.errors} errors, {report.warnings} warnings, {report.new} new")
    lines.append(f"Result: {'PASS' if report.passed else 'FAIL'}")
    return "\n".join(lines) + "\n"
