"""PVL705 in full: the status gate's, at the contract's status line, with the fix it offers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pv.config import load_config
from pv.evidence.status import Assessment
from pv.lint.gates.base import GateContext
from pv.lint.gates.status import StatusGate
from pv.lint.load import TreeLoader
from pv.model import Status


def blocked_finding(root: Path) -> Any:
    (root / "pyproject.toml").write_text('[tool.pv]\ncontracts = "contracts"\nevidence = "evidence"\n')
    (root / "contracts").mkdir()
    (root / "contracts" / "solo.yaml").write_text(
        "metadata:\n  id: solo\n  version: 1.0.0\n  description: d\n  status: ACTIVE\n"
        '  references: ["none"]\n  changelog:\n    - {version: 1.0.0, date: "2026-11-02", change: initial}\n'
    )
    (root / "evidence" / "solo").mkdir(parents=True)
    config = load_config(root)
    found = Assessment(Status.DRAFT, None, blocked=["bundle r1 is gone"])
    gate = StatusGate(assessor=lambda evidence, path, cid, keys, current: found)
    [finding] = gate.run(GateContext(config, TreeLoader(config).load())).findings
    return finding


def test_the_blocked_hint_names_verify_and_forget(tmp_path: Path) -> None:
    assert blocked_finding(tmp_path).hint == (
        "`pv evidence verify` names each cause; restore what the ledger records, or "
        "`pv evidence forget RUN_ID --reason ...`"
    )


def test_blocked_evidence_is_reported_by_the_status_gate_at_the_status_line(tmp_path: Path) -> None:
    finding = blocked_finding(tmp_path)
    assert (finding.gate, finding.code) == ("status", "PVL705")
    assert finding.keypath == ("metadata", "status") and finding.line == 5
