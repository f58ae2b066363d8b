"""Each gate passes on the good tree and fails on its own fixture tree, at the right place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pv.config import load_config
from pv.diagnostics import Severity
from pv.evidence.status import Assessment
from pv.lint import GATE_NAMES, LintReport
from pv.lint.gates.base import GateContext
from pv.lint.gates.changelog import parse_date
from pv.lint.gates.status import StatusGate
from pv.lint.load import TreeLoader
from pv.model import Status
from pv.semver import semver_key

from .conftest import FIXTURES, Runner


def located(report: LintReport) -> set[tuple[str, str, int, int]]:
    return {(f.code, f.path, f.line, f.col) for f in report.findings}


def states(report: LintReport) -> dict[str, str]:
    return {g.name: g.state for g in report.gates}


def test_gates_run_in_the_documented_order(run_fixture: Runner) -> None:
    report = run_fixture("good")
    assert (
        [g.name for g in report.gates]
        == list(GATE_NAMES)
        == [
            "validate",
            "binding",
            "observations",
            "falsifiability",
            "coverage",
            "references",
            "status",
            "changelog",
            "duplicates",
        ]
    )


def test_good_tree_passes_every_gate_and_counts_what_it_checked(run_fixture: Runner) -> None:
    report = run_fixture("good")
    assert report.findings == []
    assert set(states(report).values()) == {"passed"}
    assert report.exit_code == 0
    gates = {g.name: g for g in report.gates}
    assert gates["binding"].summary == "3 falsifiers, 3 bound"
    assert gates["observations"].counts["checked"] == 3
    assert gates["falsifiability"].counts == {"ship_blocking": 2, "with_mutant": 2, "resolved": 2}
    assert gates["coverage"].counts == {"obligations": 3, "covered": 2, "without_id": 1}
    assert gates["references"].counts == {"dependencies": 1, "kani_harnesses": 1}
    assert gates["changelog"].counts["entries"] == 3
    assert gates["duplicates"].counts["distinct_falsifiers"] == 3
    assert all(g.duration_s >= 0 for g in report.gates)


# (fixture, gate that fails, findings expected as (code, path, line, col))
FAILING = [
    (
        "observations_fail",
        "observations",
        {
            ("PVL301", "contracts/epsilon.yaml", 13, 13),
            ("PV112", "contracts/epsilon.yaml", 16, 12),
        },
    ),
    (
        "falsifiability_fail",
        "falsifiability",
        {
            ("PVL401", "contracts/zeta.yaml", 13, 20),
            ("PVL402", "contracts/zeta.yaml", 19, 13),
        },
    ),
    (
        "coverage_fail",
        "coverage",
        {
            ("PVL501", "contracts/eta.yaml", 12, 9),
            ("PV124", "contracts/eta.yaml", 22, 17),
        },
    ),
    (
        "references_fail",
        "references",
        {
            ("PV125", "contracts/theta.yaml", 6, 22),
            ("PV126", "contracts/iota.yaml", 6, 16),
            ("PV124", "contracts/theta.yaml", 21, 17),
        },
    ),
    (
        "status_fail",
        "status",
        {
            ("PVL702", "contracts/lambda.yaml", 4, 11),
            ("PVL701", "contracts/mu.yaml", 4, 11),
        },
    ),
    (
        "changelog_fail",
        "changelog",
        {
            ("PVL801", "contracts/xi.yaml", 7, 17),
            ("PVL802", "contracts/xi.yaml", 8, 17),
            ("PVL802", "contracts/xi.yaml", 9, 17),
            ("PVL803", "contracts/xi.yaml", 9, 30),
            ("PVL805", "contracts/omicron.yaml", 2, 3),
        },
    ),
    (
        "duplicates_fail",
        "duplicates",
        {
            ("PV120", "contracts/b/pi.yaml", 1, 1),
            ("PV121", "contracts/b/pi.yaml", 8, 9),
            ("PVL902", "contracts/b/pi.yaml", 1, 1),
        },
    ),
]


@pytest.mark.parametrize(("case", "gate", "expected"), FAILING, ids=[c for c, _, _ in FAILING])
def test_each_gate_fails_alone_on_its_fixture(run_fixture: Runner, case: str, gate: str, expected: set) -> None:
    report = run_fixture(case)
    assert located(report) == expected
    assert {f.gate for f in report.findings} == {gate}
    failed = [name for name, state in states(report).items() if state == "failed"]
    assert failed == [gate]
    assert "skipped" not in states(report).values()
    assert report.exit_code == 1


def test_validate_failure_skips_every_later_gate(run_fixture: Runner) -> None:
    report = run_fixture("validate_fail")
    assert located(report) == {("PV102", "contracts/gamma.yaml", 8, 1)}
    assert states(report)["validate"] == "failed"
    later = report.gates[1:]
    assert later and all(g.state == "skipped" and g.skip_reason == "validate failed" for g in later)
    assert report.exit_code == 1


def test_binding_errs_on_wrong_references_and_params_and_warns_on_a_missing_check(run_fixture: Runner) -> None:
    loose = run_fixture("binding_fail")
    expected = {
        ("PVL202", "contracts/delta.yaml", 12, 12),
        ("PVL201", "contracts/delta.yaml", 14, 5),
        ("PVL202", "contracts/delta.yaml", 19, 12),
        ("PVL202", "contracts/delta.yaml", 23, 12),
        ("PVL205", "contracts/delta.yaml", 28, 20),
    }
    assert located(loose) == expected
    # Only a falsifier with no check: at all may wait for its checker; everything else fails now.
    assert {f.code for f in loose.findings if not f.is_error} == {"PVL201"}
    assert states(loose)["binding"] == "failed" and loose.exit_code == 1
    messages = {f.subject: f.message for f in loose.findings}
    assert "no attribute 'no_such_checker'" in messages["FALSIFY-DELTA-001"]
    assert "not registered with @pv.checker" in messages["FALSIFY-DELTA-003"]
    assert messages["FALSIFY-DELTA-004"].endswith("did you mean `lintfx:measure_loss`?")
    assert messages["FALSIFY-DELTA-005"] == (
        "FALSIFY-DELTA-005: param 'numl' is not a parameter of lintfx:measure_sized; did you mean `numel`?"
    )
    assert "did you mean" not in messages["FALSIFY-DELTA-001"]  # nothing is close to no_such_checker

    strict = run_fixture("binding_fail", strict_test_binding=True)
    assert located(strict) == expected
    assert all(f.is_error for f in strict.findings)
    assert states(strict)["binding"] == "failed" and strict.exit_code == 1


def test_binding_reports_orphaned_checkers(run_fixture: Runner) -> None:
    report = run_fixture("binding_orphan")
    (orphan,) = report.findings
    assert orphan.code == "PVL203" and orphan.subject == "lintfx_orphan:measure_gone"
    assert "FALSIFY-GONE-001" in orphan.message
    assert orphan.path.endswith("lintfx_orphan/__init__.py") and orphan.line == 8
    assert report.exit_code == 0
    assert run_fixture("binding_orphan", strict=True).exit_code == 1


def test_binding_reports_a_checker_package_that_does_not_import(run_fixture: Runner, tmp_path: Path) -> None:
    report = run_fixture("good", strict_test_binding=True)
    assert report.exit_code == 0
    from pv.lint import lint
    from pv.lint.runner import LintOptions

    config = load_config(FIXTURES / "good", checker_packages=["lintfx", "no_such_package_xyz"])
    broken = lint(config, LintOptions(use_state=False, strict_test_binding=True))
    codes = {f.code for f in broken.findings}
    assert "PVL204" in codes
    assert states(broken)["binding"] == "failed"


def _status_gate_with(backing_status: Status, case: str = "status_fail") -> list[tuple[str, str]]:
    config = load_config(FIXTURES / case)
    tree = TreeLoader(config).load()
    gate = StatusGate(
        assessor=lambda evidence, path, cid, keys, current: Assessment(backing_status, None, reasons=["given"])
    )
    return sorted((f.code, f.subject) for f in gate.run(GateContext(config, tree)).findings)


def test_status_uses_the_evidence_backing_when_an_evidence_folder_exists() -> None:
    # mu (ACTIVE_ALGORITHM_LEVEL) has an evidence folder: its backing decides, and must match
    # exactly (the rule `pv promote --check` applies); lambda has none: always an error
    assert _status_gate_with(Status.ACTIVE) == [("PVL702", "lambda"), ("PVL703", "mu")]
    assert _status_gate_with(Status.ACTIVE_ALGORITHM_LEVEL) == [("PVL702", "lambda")]
    assert _status_gate_with(Status.DRAFT) == [("PVL701", "mu"), ("PVL702", "lambda")]


def test_retired_and_draft_contracts_need_no_evidence(run_fixture: Runner) -> None:
    report = run_fixture("status_fail")
    assert not any(f.subject == "nu" for f in report.findings)
    status = next(g for g in report.gates if g.name == "status")
    assert status.counts == {"contracts": 3, "above_draft": 2, "backed": 0}


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.0.0", "1.0.1"),
        ("1.9.0", "1.10.0"),
        ("1.0.0-alpha", "1.0.0"),
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-rc.1", "1.0.0"),
    ],
)
def test_semver_precedence(lower: str, higher: str) -> None:
    lo, hi = semver_key(lower), semver_key(higher)
    assert lo is not None and hi is not None and lo < hi


def test_semver_and_dates_reject_malformed_values() -> None:
    assert semver_key("1.0") is None and semver_key("v1.0.0") is None
    assert semver_key("1.0.0+build.5") == semver_key("1.0.0")
    assert parse_date("2026-02-28") is not None
    assert parse_date("2026-02-30") is None and parse_date("20260228") is None and parse_date("28/02/2026") is None


def test_changelog_accepts_promotion_entries_that_repeat_the_version(tree_copy: Callable[[str], Path]) -> None:
    from .conftest import lint_dir

    root = tree_copy("good")
    alpha = root / "contracts" / "alpha.yaml"
    promoted = '    - {version: 1.1.0, date: "2026-11-21", change: promoted, evidence: evidence/alpha/run-1}\n'
    text = alpha.read_text().replace("  changelog:\n", "  changelog:\n" + promoted)
    alpha.write_text(text)
    report = lint_dir(root, use_state=False)
    assert report.findings == [] and report.exit_code == 0
    # without naming evidence, the same repeated version is an ordering error
    alpha.write_text(text.replace(", evidence: evidence/alpha/run-1", ""))
    report = lint_dir(root, use_state=False)
    assert [(f.code, f.line) for f in report.findings] == [("PVL802", 10)]


def test_a_checker_outside_the_packages_is_one_error_under_binding(tree_copy: Callable[[str], Path]) -> None:
    from .conftest import lint_dir

    root = tree_copy("good")
    beta = root / "contracts" / "beta.yaml"
    beta.write_text(beta.read_text().replace("check: lintfx:measure_grad", "check: os.path:join"))
    report = lint_dir(root, use_state=False)
    assert [(f.gate, f.code, f.line, f.col) for f in report.findings] == [("binding", "PV111", 17, 12)]
    assert states(report)["binding"] == "failed" and report.exit_code == 1
    binding = next(g for g in report.gates if g.name == "binding")
    assert binding.counts["unbound"] == 1


def _status_findings(assessment: Assessment, pull_request: bool = False) -> tuple[list[Any], dict[str, int]]:
    config = load_config(FIXTURES / "status_fail")
    tree = TreeLoader(config).load()
    gate = StatusGate(assessor=lambda evidence, path, cid, keys, current: assessment)
    outcome = gate.run(GateContext(config, tree, pull_request=pull_request))
    return sorted(outcome.findings, key=lambda f: f.code), outcome.counts


def _rejected(*kinds: str) -> Any:
    from pv.evidence.verify import BundleReport, Problem

    return BundleReport(Path("b"), problems=[Problem(k, "f", "d") for k in kinds])  # type: ignore[arg-type]


def test_status_findings_to_the_word() -> None:
    findings, counts = _status_findings(Assessment(Status.DRAFT, None, reasons=["given"]))
    assert counts == {"contracts": 3, "above_draft": 2, "backed": 0}
    unbacked, missing = findings
    assert (unbacked.code, unbacked.severity, unbacked.subject) == ("PVL701", Severity.ERROR, "mu")
    assert unbacked.message == "status ACTIVE_ALGORITHM_LEVEL but the verified evidence backs only DRAFT (given)"
    assert unbacked.hint == "evidence: no verified, current bundle; run the falsifiers and `pv promote`"
    assert missing.message == "status ACTIVE but no evidence exists for lambda"
    assert missing.hint == "evidence is looked for in evidence/lambda/"
    bundle = FIXTURES / "status_fail" / "evidence" / "mu" / "run-1"
    findings, counts = _status_findings(Assessment(Status.ACTIVE, bundle, reasons=["r"]))
    behind = next(f for f in findings if f.code == "PVL703")
    assert behind.hint == "evidence: evidence/mu/run-1; run the falsifiers and `pv promote`"
    assert counts["backed"] == 0
    assert _status_findings(Assessment(Status.ACTIVE_ALGORITHM_LEVEL, bundle))[1]["backed"] == 1


@pytest.mark.parametrize(
    ("assessment", "pending"),
    [
        (Assessment(Status.DRAFT, None, rejected=[_rejected("stale"), _rejected("untrusted", "superseded")]), True),
        (
            Assessment(Status.DRAFT, None, rejected=[_rejected("stale", "tampered")]),
            False,
        ),  # tampering is no PR's doing
        (Assessment(Status.DRAFT, None, rejected=[]), False),  # nothing left behind: nothing measured at all
        (Assessment(Status.DRAFT, None, rejected=[_rejected("stale")], blocked=["ledger broken"]), False),
        (Assessment(Status.DRAFT, None, rejected=[_rejected("stale")], counted=[_rejected()]), False),
    ],
)
def test_on_a_pull_request_evidence_its_changes_left_behind_is_a_warning(assessment: Assessment, pending: bool) -> None:
    findings, _ = _status_findings(assessment, pull_request=True)
    mu = next(f for f in findings if f.subject == "mu")
    if pending:
        assert (mu.code, mu.severity) == ("PVL704", Severity.WARNING)
        assert mu.message.endswith("; this pull request's changes left the evidence behind")
        assert mu.hint == "the protected branch's CI measures and signs the change after it merges"
    else:
        assert mu.code == ("PVL705" if assessment.blocked else "PVL701") and mu.severity is Severity.ERROR
    assert _status_findings(assessment, pull_request=False)[0][0].code != "PVL704"  # only on a pull request


def test_evidence_left_behind_by_every_kind_at_once_is_still_left_behind() -> None:
    from types import SimpleNamespace

    from pv.lint.gates.status import _left_behind

    def found(*kinds: str, blocked: bool = False, counted: bool = False) -> Any:
        problems = [SimpleNamespace(kind=k) for k in kinds]
        return SimpleNamespace(blocked=blocked, counted=counted, rejected=[SimpleNamespace(problems=problems)])

    assert _left_behind(found("stale", "superseded", "untrusted"))
    assert _left_behind(found("stale"))
    assert not _left_behind(found("stale", "tampered"))
    assert not _left_behind(found("stale", blocked=True))
    assert not _left_behind(found("stale", counted=True))
