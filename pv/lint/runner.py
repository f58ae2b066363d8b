"""Runs the gates in order, times each one, and applies strictness, the baseline and the ratchet.

If the validate gate fails, every later gate is reported ``skipped (validate failed)``: they read
the contract model, and a tree that does not validate cannot be judged further.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pv.config import PvConfig
from pv.diagnostics import Severity
from pv.lint.baseline import Baseline
from pv.lint.findings import Finding
from pv.lint.gates import GATES
from pv.lint.gates.base import Gate, GateContext
from pv.lint.gates.validate import to_findings
from pv.lint.state import StateDir
from pv.lint.tree import LintTree
from pv.project import Project

GateState = Literal["passed", "failed", "skipped"]


def default_gates() -> list[Gate]:
    return [gate() for gate in GATES]


GATE_NAMES: tuple[str, ...] = tuple(g.name for g in default_gates())


@dataclass
class LintOptions:
    strict: bool = False  # warnings count as errors
    strict_test_binding: bool = False  # a missing or unimportable checker is an error
    baseline: Path | None = None
    write_baseline: bool = False
    use_state: bool = True  # read and write .pv/ (ratchet, index, cache)
    base_ref: str = "HEAD"  # git ref the changelog gate compares versions against
    pull_request: bool = False  # evidence only the PR's own changes left behind is a warning


@dataclass
class GateResult:
    name: str
    description: str
    state: GateState
    summary: str
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    skip_reason: str = ""

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.counts_against)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if not f.is_error and not f.baselined)


@dataclass
class LintReport:
    target: str  # the linted contracts directory, relative to the root
    root: Path
    gates: list[GateResult]
    contracts: int
    duration_s: float = 0.0
    strict: bool = False
    strict_test_binding: bool = False
    baseline: Path | None = None
    baseline_written: bool = False
    baseline_fixed: int = 0  # entries dropped from the baseline because they were fixed
    first_run: bool = False  # no previous run to compare with: everything is new
    # the same inputs print this same report again: the ratchet stood still and no contract was
    # read from YAML (a run that reads any says fewer "from the .pv/ cache" than the next one)
    steady: bool = False

    @property
    def findings(self) -> list[Finding]:
        return sorted((f for g in self.gates for f in g.findings), key=Finding.sort_key)

    @property
    def active(self) -> list[Finding]:
        """Findings that are not forgiven by the baseline."""
        return [f for f in self.findings if not f.baselined]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.counts_against)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.active if not f.is_error)

    @property
    def new(self) -> int:
        return sum(1 for f in self.active if f.new)

    @property
    def baselined(self) -> int:
        return sum(1 for f in self.findings if f.baselined)

    @property
    def passed(self) -> bool:
        return all(g.state != "failed" for g in self.gates)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def run_gates(
    ctx: GateContext,
    gates: Sequence[Gate],
    *,
    strict: bool = False,
    baseline: Baseline | None = None,
) -> list[GateResult]:
    """Run ``gates`` in order; after a failed ``validate`` the rest are skipped."""
    results: list[GateResult] = []
    blocked = ""
    for gate in gates:
        if blocked:
            results.append(
                GateResult(gate.name, gate.description, "skipped", f"skipped ({blocked})", skip_reason=blocked)
            )
            continue
        t0 = time.perf_counter()
        outcome = gate.run(ctx)
        findings = [*outcome.findings, *to_findings(ctx, gate.name)]
        elapsed = time.perf_counter() - t0
        if gate.name == "validate":
            elapsed += ctx.tree.load_s  # loading and validating the files is this gate's work
        if strict:
            findings = [f.with_(severity=Severity.ERROR) if not f.is_error else f for f in findings]
        if baseline is not None:
            findings = baseline.mark(findings)
        failed = any(f.counts_against for f in findings)
        results.append(
            GateResult(
                gate.name,
                gate.description,
                "failed" if failed else "passed",
                outcome.summary,
                outcome.counts,
                elapsed,
                sorted(findings, key=Finding.sort_key),
            )
        )
        if failed and gate.name == "validate":
            blocked = "validate failed"
    return results


def _mark_new(results: list[GateResult], previous: dict[str, str] | None) -> None:
    for g in results:
        g.findings = [f.with_(new=previous is None or f.fingerprint not in previous) for f in g.findings]


def _ratchet_entries(results: list[GateResult], previous: dict[str, str] | None) -> dict[str, str]:
    """This run's fingerprints, keeping the previous ones of gates that were skipped."""
    skipped = {g.name for g in results if g.state == "skipped"}
    entries = {fp: gate for fp, gate in (previous or {}).items() if gate in skipped}
    for g in results:
        for f in g.findings:
            entries[f.fingerprint] = g.name
    return entries


def run_lint(
    config: PvConfig,
    tree: LintTree,
    options: LintOptions,
    *,
    gates: Sequence[Gate] | None = None,
    project: Project | None = None,
) -> LintReport:
    """Run every gate over ``tree`` and settle the ratchet and the baseline."""
    t0 = time.perf_counter()
    ctx = GateContext(
        config,
        tree,
        strict_test_binding=options.strict_test_binding,
        base_ref=options.base_ref,
        project=project,
        pull_request=options.pull_request,
    )
    baseline: Baseline | None = None
    if options.baseline is not None and not options.write_baseline:
        baseline = Baseline.load(options.baseline)
    results = run_gates(ctx, gates or default_gates(), strict=options.strict, baseline=baseline)

    target = config.relpath(tree.root)
    state = StateDir(config.state_dir)
    previous = state.previous(target) if options.use_state else None
    _mark_new(results, previous)
    entries = _ratchet_entries(results, previous)
    if options.use_state:
        state.write_previous(target, entries)

    report = LintReport(
        target=target,
        root=config.root,
        gates=results,
        contracts=len(tree.contracts),
        strict=options.strict,
        strict_test_binding=options.strict_test_binding,
        baseline=options.baseline,
        first_run=previous is None,
        steady=previous is not None and entries == previous and tree.reloaded == 0,
    )
    all_findings = [f for g in results for f in g.findings]
    if options.baseline is not None and options.write_baseline:
        Baseline.from_findings(options.baseline, all_findings).save()
        report.baseline_written = True
        for g in results:
            g.findings = [f.with_(baselined=True) for f in g.findings]
            if g.state == "failed":
                g.state = "passed"
    elif baseline is not None:
        ran = [g.name for g in results if g.state != "skipped"]
        fixed = baseline.fixed(all_findings, ran)
        baseline.shrink(fixed)
        report.baseline_fixed = len(fixed)
    report.duration_s = time.perf_counter() - t0
    return report
