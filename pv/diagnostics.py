"""Diagnostics: one finding about one place in one file, printed as ``path:line:col: CODE message``.

Every static check in pv (loader, validate, lint) reports through :class:`Diagnostic`, so that
editors, CI annotations and the JSON output all read the same shape.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"

    @property
    def rank(self) -> int:
        # errors sort before warnings at the same location
        return 0 if self is Severity.ERROR else 1


@dataclass(frozen=True)
class Diagnostic:
    """A finding at ``path:line:col`` (both 1-based; 0 means "the file as a whole")."""

    path: str
    line: int
    col: int
    code: str
    message: str
    hint: str = ""
    severity: Severity = Severity.ERROR

    def __post_init__(self) -> None:
        # Accept Path objects from callers but keep a plain string so the record hashes, sorts
        # and serialises the same way everywhere.
        if not isinstance(self.path, str):
            object.__setattr__(self, "path", os.fspath(self.path))

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def format(self, *, hint: bool = False) -> str:
        """``path:line:col: CODE message``; with ``hint=True`` the fix hint follows on its own line."""
        text = f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"
        if hint and self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        return (self.path, self.line, self.col, self.severity.rank, self.code, self.message)

    def with_severity(self, severity: Severity) -> Diagnostic:
        return Diagnostic(self.path, self.line, self.col, self.code, self.message, self.hint, severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            path=str(data["path"]),
            line=int(data["line"]),
            col=int(data["col"]),
            code=str(data["code"]),
            message=str(data["message"]),
            hint=str(data.get("hint", "")),
            severity=Severity(data.get("severity", "error")),
        )


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Deterministic order: by file, then position, errors first, then code; duplicates dropped."""
    return sorted(set(diagnostics), key=Diagnostic.sort_key)


def count(diagnostics: Iterable[Diagnostic]) -> tuple[int, int]:
    """Return ``(errors, warnings)``."""
    errors = warnings = 0
    for d in diagnostics:
        if d.is_error:
            errors += 1
        else:
            warnings += 1
    return errors, warnings


# Real typos score 0.85 and up; below 0.75 a "suggestion" is noise (quantizations -> equations: 0.73).
SUGGEST_CUTOFF = 0.75


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` when it is similar enough to be a typo of it, else None."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=SUGGEST_CUTOFF)
    return matches[0] if matches else None
