"""Lint findings: a diagnostic plus the gate that raised it, what it is about, and its fingerprint.

A fingerprint identifies a finding across runs by its content: the rule code, the file path
relative to the repository root, the contract or falsifier id it is about, and the message.  It
deliberately leaves out line and column, so that inserting a line above a finding does not make
it "new", and it uses sha256 rather than ``hash()``, whose value changes with every process.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from pv.diagnostics import Diagnostic, Severity

KeyPath = tuple[str | int, ...]


# ``other.yaml:12`` or ``other.yaml:12:5`` inside a message (validate's "already declared at")
_POSITION_RE = re.compile(r"(\.ya?ml):\d+(?::\d+)?")


def fingerprint(code: str, path: str, subject: str, message: str) -> str:
    """sha256 over the finding's content; stable across machines, processes and line shifts.

    Positions that a message quotes (another file's ``path:line``) are dropped too, so that
    editing the other file above the quoted line does not make the finding look new.
    """
    text = _POSITION_RE.sub(r"\1", message)
    payload = "\x1f".join((code, path, subject, text)).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()


@dataclass(frozen=True)
class Finding:
    """One lint finding.  ``path`` is relative to the repository root (forward slashes)."""

    gate: str
    code: str
    severity: Severity
    message: str
    path: str
    line: int = 0
    col: int = 0
    subject: str = ""  # the contract id or FALSIFY id the finding is about
    hint: str = ""
    new: bool = False  # not in the previous run's findings (.pv/lint-previous.json)
    baselined: bool = False  # forgiven by the --baseline file
    keypath: KeyPath = field(default=(), compare=False)  # where in the YAML, for late location

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.code, self.path, self.subject, self.message)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    @property
    def counts_against(self) -> bool:
        """Whether this finding can fail the run (a baselined one cannot)."""
        return self.is_error and not self.baselined

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.path, self.line, self.col, self.code, self.message, self.hint, self.severity)

    def format(self) -> str:
        return self.diagnostic().format()

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        return (self.path, self.line, self.col, self.severity.rank, self.code, self.message)

    def with_(self, **changes: Any) -> Finding:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "subject": self.subject,
            "fingerprint": self.fingerprint,
            "new": self.new,
            "baselined": self.baselined,
        }

    @classmethod
    def from_diagnostic(cls, gate: str, diagnostic: Diagnostic, path: str, subject: str = "") -> Finding:
        return cls(
            gate=gate,
            code=diagnostic.code,
            severity=diagnostic.severity,
            message=diagnostic.message,
            path=path,
            line=diagnostic.line,
            col=diagnostic.col,
            subject=subject,
            hint=diagnostic.hint,
        )
