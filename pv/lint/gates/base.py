"""What every gate shares: the context it reads and the outcome it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pv.checkers import CheckerBindingError, CheckerSpec, resolve
from pv.config import PvConfig
from pv.diagnostics import Severity
from pv.lint.findings import Finding, KeyPath
from pv.lint.tree import LintContract, LintTree
from pv.project import Project


class CheckerIndex:
    """Resolves ``check:`` references once per run; binding and observations both ask."""

    def __init__(self, packages: tuple[str, ...]) -> None:
        self.packages = packages
        self._cache: dict[str, CheckerSpec | CheckerBindingError] = {}

    def resolve(self, ref: str) -> CheckerSpec | CheckerBindingError:
        if ref not in self._cache:
            try:
                self._cache[ref] = resolve(ref, self.packages)
            except CheckerBindingError as exc:
                self._cache[ref] = exc
        return self._cache[ref]


@dataclass
class GateContext:
    config: PvConfig
    tree: LintTree
    strict_test_binding: bool = False
    base_ref: str = "HEAD"  # the changelog gate's bump check compares against this git ref
    project: Project | None = None  # the contracts as the loader read them (default: a fresh one)
    pull_request: bool = False  # lint --pr: evidence only the PR's own changes left behind is a warning
    checkers: CheckerIndex = field(init=False)

    def __post_init__(self) -> None:
        self.checkers = CheckerIndex(self.config.checker_packages)
        if self.project is None:
            self.project = Project(self.config)


@dataclass
class GateOutcome:
    """What a gate found and what it counted; ``summary`` is the human line ("41 falsifiers, 41 bound")."""

    summary: str
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


class Gate(Protocol):
    name: str
    description: str

    def run(self, ctx: GateContext) -> GateOutcome: ...


def finding(
    gate: str,
    code: str,
    item: LintContract,
    keypath: KeyPath,
    message: str,
    *,
    subject: str | None = None,
    hint: str = "",
    severity: Severity = Severity.ERROR,
) -> Finding:
    """A finding located at ``keypath`` inside ``item``'s YAML."""
    line, col = item.locate(keypath)
    return Finding(
        gate=gate,
        code=code,
        severity=severity,
        message=message,
        path=item.rel,
        line=line,
        col=col,
        subject=subject if subject is not None else item.id,
        hint=hint,
        keypath=keypath,
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"
