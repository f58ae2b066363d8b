"""The status gate over a tree whose contracts come in every state, in an order that puts each
kind of early exit (retired, backed, left behind by a pull request) before the contracts after
it: every contract is still judged, counted once, and the trusted keys are read once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pv.config import ConfigError, PvConfig, load_config
from pv.diagnostics import Severity
from pv.evidence.status import Assessment
from pv.evidence.verify import BundleReport, Problem
from pv.lint.gates.base import GateContext
from pv.lint.gates.status import StatusGate
from pv.lint.load import TreeLoader
from pv.model import Status

CONTRACT = """\
metadata:
  id: {cid}
  version: 1.0.0
  status: {status}
  description: One state of the status gate.
  references: ["none"]
  changelog:
    - {{version: 1.0.0, date: "2026-11-02", change: initial}}
"""

# (id, declared status, has an evidence folder), in the order the gate reads them
TREE = [
    ("a-retired", "RETIRED", True),
    ("b-backed", "ACTIVE", True),
    ("c-left-behind", "ACTIVE", True),
    ("d-backed", "ACTIVE_ALGORITHM_LEVEL", True),
    ("e-unbacked", "ACTIVE", True),
    ("f-draft", "DRAFT", False),
    ("g-no-evidence", "ACTIVE", False),
]
STALE = BundleReport(Path("b"), problems=[Problem("stale", "f", "d")])
FOUND = {
    "b-backed": Assessment(Status.ACTIVE, None),
    "c-left-behind": Assessment(Status.DRAFT, None, rejected=[STALE]),
    "d-backed": Assessment(Status.ACTIVE_ALGORITHM_LEVEL, None),
    "e-unbacked": Assessment(Status.DRAFT, None, reasons=["given"]),
}


def project(root: Path, tree: list[tuple[str, str, bool]]) -> PvConfig:
    """A project holding ``tree``'s contracts, each with an evidence folder where it says so."""
    (root / "pyproject.toml").write_text(
        '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["lintfx"]\nevidence = "evidence"\n'
    )
    (root / "contracts").mkdir()
    for cid, status, evidence in tree:
        (root / "contracts" / f"{cid}.yaml").write_text(CONTRACT.format(cid=cid, status=status))
        if evidence:
            (root / "evidence" / cid).mkdir(parents=True)
    return load_config(root)


@pytest.fixture
def config(tmp_path: Path) -> PvConfig:
    return project(tmp_path, TREE)


def run(config: PvConfig, pull_request: bool = True, found: Assessment | None = None) -> Any:
    """The gate's outcome, each contract assessed as ``FOUND`` says (or all as ``found``)."""
    gate = StatusGate(assessor=lambda evidence, path, cid, keys, current: found or FOUND[cid])
    return gate.run(GateContext(config, TreeLoader(config).load(), pull_request=pull_request))


def blocked_solo(root: Path, status: str) -> Any:
    """The one finding on a contract ``solo`` declaring ``status`` whose evidence is blocked."""
    config = project(root, [("solo", status, True)])
    [finding] = run(config, found=Assessment(Status.DRAFT, None, blocked=["bundle r1 is gone"])).findings
    return finding


def test_every_contract_after_an_early_exit_is_judged(config: PvConfig) -> None:
    outcome = run(config)
    assert [(f.subject, f.code) for f in outcome.findings] == [
        ("c-left-behind", "PVL704"),
        ("e-unbacked", "PVL701"),
        ("g-no-evidence", "PVL702"),
    ]
    assert outcome.counts == {"contracts": 7, "above_draft": 5, "backed": 2}
    assert outcome.summary == "7 contracts, 5 above DRAFT, 2 backed by evidence"


@pytest.mark.parametrize("pull_request", [False, True])
def test_every_finding_names_its_gate_and_the_status_line(config: PvConfig, pull_request: bool) -> None:
    for f in run(config, pull_request=pull_request).findings:
        assert f.gate == "status"
        assert f.keypath == ("metadata", "status") and f.line == 4, f


def test_one_contract_is_one_contract(tmp_path: Path) -> None:
    config = project(tmp_path, [("solo", "DRAFT", False)])
    outcome = StatusGate().run(GateContext(config, TreeLoader(config).load()))
    assert outcome.summary == "1 contract, 0 above DRAFT, 0 backed by evidence"


def test_the_trusted_keys_are_read_once(config: PvConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    monkeypatch.setattr(type(config), "key_ring", lambda self: reads.append(1))
    run(config)
    assert reads == [1]


def test_unreadable_keys_are_one_finding_at_the_first_contract_with_evidence(
    config: PvConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: PvConfig) -> None:
        raise ConfigError("trusted keys: no such file keys.pem")

    monkeypatch.setattr(type(config), "key_ring", broken)
    [finding] = run(config).findings
    assert (finding.gate, finding.code, finding.subject) == ("status", "PVL701", "b-backed")
    assert finding.keypath == ("metadata", "status") and finding.line == 4
    assert finding.message == "trusted keys: no such file keys.pem"


@pytest.mark.parametrize("pull_request", [False, True])
def test_blocked_evidence_is_its_own_error_whatever_status_is_declared(
    config: PvConfig, monkeypatch: pytest.MonkeyPatch, pull_request: bool
) -> None:
    blocked = Assessment(Status.DRAFT, None, rejected=[STALE], blocked=["bundle r1 is gone"])
    monkeypatch.setitem(FOUND, "b-backed", blocked)  # declared ACTIVE
    monkeypatch.setitem(FOUND, "d-backed", blocked)  # declared ACTIVE_ALGORITHM_LEVEL
    monkeypatch.setitem(FOUND, "e-unbacked", blocked)  # declared ACTIVE
    outcome = run(config, pull_request=pull_request)
    codes = {f.subject: f.code for f in outcome.findings}
    assert [codes[c] for c in ("b-backed", "d-backed", "e-unbacked")] == ["PVL705"] * 3
    finding = next(f for f in outcome.findings if f.subject == "b-backed")
    assert finding.severity is Severity.ERROR
    assert finding.message == "evidence blocked: bundle r1 is gone"
    assert finding.hint.startswith("`pv evidence verify` names each cause")
    assert outcome.counts["backed"] == 0


def test_a_draft_contract_with_blocked_evidence_is_blocked_not_behind(tmp_path: Path) -> None:
    assert blocked_solo(tmp_path, "DRAFT").code == "PVL705"


def test_the_blocked_hint_names_verify_and_forget(tmp_path: Path) -> None:
    assert blocked_solo(tmp_path, "ACTIVE").hint == (
        "`pv evidence verify` names each cause; restore what the ledger records, or "
        "`pv evidence forget RUN_ID --reason ...`"
    )


def test_blocked_evidence_is_reported_by_the_status_gate_at_the_status_line(tmp_path: Path) -> None:
    finding = blocked_solo(tmp_path, "ACTIVE")
    assert (finding.gate, finding.code) == ("status", "PVL705")
    assert finding.keypath == ("metadata", "status") and finding.line == 4
