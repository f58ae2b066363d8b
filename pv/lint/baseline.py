"""The baseline: findings a repository has accepted for now, so that lint fails only on new ones.

A baseline is a committed JSON file of fingerprints, each with the code, path, subject and message
it stands for so a reviewer can read what is being forgiven.  It only ever shrinks on its own:
when a forgiven finding is fixed, the next run drops it from the file, so the same defect cannot
come back unnoticed.  Adding to it takes an explicit ``--write-baseline``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pv.lint.findings import Finding
from pv.lint.state import dumps, read_json, write_if_changed

BASELINE_VERSION = 1


class BaselineError(ValueError):
    """The baseline file exists but is not a pv lint baseline."""


@dataclass
class Baseline:
    path: Path
    entries: dict[str, dict[str, str]]  # fingerprint -> what it stood for

    @classmethod
    def load(cls, path: Path) -> Baseline:
        if not path.exists():
            raise BaselineError(f"{path}: no such baseline file (create one with --write-baseline)")
        data = read_json(path)
        if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
            raise BaselineError(f"{path}: not a pv lint baseline (version {BASELINE_VERSION} expected)")
        findings = data.get("findings")
        if not isinstance(findings, dict):
            raise BaselineError(f"{path}: 'findings' must be an object of fingerprints")
        return cls(path, {str(k): dict(v) for k, v in findings.items() if isinstance(v, dict)})

    @staticmethod
    def entry(finding: Finding) -> dict[str, str]:
        return {
            "gate": finding.gate,
            "code": finding.code,
            "path": finding.path,
            "subject": finding.subject,
            "message": finding.message,
        }

    @classmethod
    def from_findings(cls, path: Path, findings: Iterable[Finding]) -> Baseline:
        return cls(path, {f.fingerprint: cls.entry(f) for f in findings})

    def mark(self, findings: Sequence[Finding]) -> list[Finding]:
        """The findings, with those the baseline forgives marked ``baselined``."""
        return [f.with_(baselined=True) if f.fingerprint in self.entries else f for f in findings]

    def fixed(self, findings: Iterable[Finding], gates_run: Iterable[str]) -> list[str]:
        """Baselined fingerprints that no longer occur, among the gates that actually ran.

        A gate skipped this run (because validate failed) found nothing, which is not the same as
        its findings being fixed; their entries stay.
        """
        present = {f.fingerprint for f in findings}
        ran = set(gates_run)
        return sorted(fp for fp, e in self.entries.items() if fp not in present and e.get("gate", "") in ran)

    def shrink(self, fixed: Iterable[str]) -> bool:
        """Drop fixed fingerprints and rewrite the file if anything was dropped."""
        before = len(self.entries)
        for fp in fixed:
            self.entries.pop(fp, None)
        return len(self.entries) != before and self.save()

    def save(self) -> bool:
        payload: dict[str, Any] = {
            "version": BASELINE_VERSION,
            "tool": "pv lint",
            "findings": {fp: self.entries[fp] for fp in sorted(self.entries)},
        }
        return write_if_changed(self.path, dumps(payload, indent=2))
