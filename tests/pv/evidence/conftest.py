"""Fixtures for the evidence tests: a small project with one contract and run records over it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pv.bundle.model import Environment
from pv.evidence.writer import write_run
from pv.results import ContractRun, FalsifierResult, MutantResult, RunRecord, Verdict

CONTRACT = """\
# Demo contract: every comment here must survive `pv promote` byte for byte.
metadata:
  id: demo-v1
  version: 1.0.0        # semver, checked by lint
  status: DRAFT         # written by pv promote
  kind: training-loop
  description: A demo claim about a tiny training loop.
  changelog:
    - {version: 1.0.0, date: "2026-01-01", change: initial}

# The claims.
proof_obligations:
  - id: DEMO-INV-001
    type: bound
    property: the first loss is below chance

falsification_tests:
  - id: FALSIFY-DEMO-001
    obligation: DEMO-INV-001
    prediction: step-0 loss is below 0.7 ln(V)
    check: falsifiers.demo:loss
    params: {vocab_size: 64, seed: 0}
    expect: "step0_loss <= 0.7 * ln(vocab_size)"
    ship_blocking: true
    mutant: engine.faults:demo_fault
  - id: FALSIFY-DEMO-002
    obligation: DEMO-INV-001
    prediction: the same holds on a GPU
    check: falsifiers.demo:loss_gpu
    expect: "step0_loss <= 3.0"
    ship_blocking: true
    requires: [cuda]
    mutant: engine.faults:demo_fault
  - id: FALSIFY-DEMO-003
    obligation: DEMO-INV-001
    prediction: advisory throughput
    check: falsifiers.demo:speed
    expect: "tokens_per_s > 10"
"""

ENV = Environment(
    python="3.11.7",
    implementation="CPython 3.11.7",
    packages={"pv-harness": "0.1.0", "torch": None},
    os="Linux",
    machine="x86_64",
    cpu_model="test cpu",
    cpu_cores_physical=2,
    cpu_cores_logical=2,
    gpu="none",
)

IDS = ["FALSIFY-DEMO-001", "FALSIFY-DEMO-002", "FALSIFY-DEMO-003"]
SHIP = ["FALSIFY-DEMO-001", "FALSIFY-DEMO-002"]


@dataclass
class Project:
    root: Path
    contract: Path
    evidence: Path

    def contract_run(self) -> ContractRun:
        data = self.contract.read_bytes()
        return ContractRun(
            contract_id="demo-v1",
            path="contracts/demo-v1.yaml",
            sha256=hashlib.sha256(data).hexdigest(),
            version="1.0.0",
            status="DRAFT",
            declared=list(IDS),
            ship_blocking=list(SHIP),
        )


def result(
    fid: str,
    verdict: Verdict,
    *,
    mutant: Verdict | None = Verdict.FALSIFIED,
    skip_reason: str | None = None,
    skip_kind: str | None = None,
    observations: dict[str, Any] | None = None,
    duration_s: float = 0.5,
    artifacts: list[str] | None = None,
) -> FalsifierResult:
    return FalsifierResult(
        contract_id="demo-v1",
        falsify_id=fid,
        verdict=verdict,
        ship_blocking=fid in SHIP,
        expect="step0_loss <= 3.0",
        params={"vocab_size": 64},
        observations={"step0_loss": 2.1} if observations is None else observations,
        seed=0,
        duration_s=duration_s,
        skip_reason=skip_reason,
        skip_kind=skip_kind,
        mutant=None if mutant is None else MutantResult("engine.faults:demo_fault", mutant, {"step0_loss": 9.0}),
        artifacts=artifacts or [],
    )


def record(
    project: Project, results: list[FalsifierResult], *, started: str = "2026-03-01T10:00:00.000001+00:00"
) -> RunRecord:
    return RunRecord(
        run_id="session-1",
        started_at=started,
        finished_at="2026-03-01T10:00:05+00:00",
        contracts={"demo-v1": project.contract_run()},
        results=results,
        mutants_enabled=True,
        selection="ship_blocking",
    )


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "contracts").mkdir()
    contract = tmp_path / "contracts" / "demo-v1.yaml"
    contract.write_text(CONTRACT, encoding="utf-8")
    return Project(tmp_path, contract, tmp_path / "evidence")


Writer = Callable[..., Path]


@pytest.fixture
def write(project: Project) -> Writer:
    """Write one bundle from results; returns its folder."""

    def _write(results: list[FalsifierResult], **kw: Any) -> Path:
        outcomes = write_run(record(project, results, **kw), project.evidence, project.root, ENV)
        assert len(outcomes) == 1 and outcomes[0].path is not None, outcomes
        return outcomes[0].path

    return _write


def all_survive() -> list[FalsifierResult]:
    return [result(i, Verdict.SURVIVED) for i in IDS]


def reseal(bundle: Path, data: dict[str, Any], statement: dict[str, Any] | None = None) -> None:
    """What a forger with pv's own functions can do: rewrite ``bundle.json`` (and the statement,
    derived from it unless given) and recompute the manifest, so every digest checks out."""
    from pv.bundle import intoto
    from pv.bundle.digest import dumps, sha256_bytes
    from pv.bundle.model import Bundle
    from pv.evidence.writer import manifest_text

    files = {
        "bundle.json": dumps(data).encode(),
        "statement.intoto.json": dumps(statement or intoto.statement(Bundle(**data))).encode(),
    }
    envelope = bundle / "statement.intoto.dsse.json"
    if envelope.exists():
        files[envelope.name] = envelope.read_bytes()
    for name, raw in files.items():
        (bundle / name).write_bytes(raw)
    (bundle / "MANIFEST.sha256").write_text(manifest_text({n: sha256_bytes(r) for n, r in files.items()}))
