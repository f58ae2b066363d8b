"""Shared helpers for the everyday commands: fixture trees, the CLI, evidence bundles, git."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from pv.app import app
from pv.bundle.model import Environment
from pv.cli import COMMAND_MODULES
from pv.evidence.writer import write_run
from pv.results import ContractRun, FalsifierResult, MutantResult, RunRecord, Verdict

for _module in COMMAND_MODULES:
    importlib.import_module(_module)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "everyday"

ENV = Environment(
    python="3.11.7",
    implementation="CPython 3.11.7",
    packages={"pv-harness": "0.1.0"},
    os="Linux",
    machine="x86_64",
    cpu_model="test cpu",
    gpu="none",
)

Invoke = Callable[..., tuple[int, str]]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """``cli(*args, cwd=path)`` runs ``pv`` in ``cwd``; returns (exit code, stdout + stderr), or
    only stdout with ``stdout_only=True`` (machine-readable output must parse on its own)."""
    runner = CliRunner()

    def invoke(*args: str, cwd: Path, stdout_only: bool = False) -> tuple[int, str]:
        with monkeypatch.context() as m:
            m.chdir(cwd)
            m.setattr(sys, "path", list(sys.path))  # ensure_importable must not leak between tests
            result = runner.invoke(app, list(args))
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout if stdout_only else result.output

    return invoke


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the fixture tree (two contracts, alpha depends on beta)."""
    dest = tmp_path / "tree"
    shutil.copytree(FIXTURES / "tree", dest)
    return dest


@dataclass
class Result:
    fid: str
    verdict: Verdict
    ship_blocking: bool = True
    skip_reason: str | None = None
    killed: bool | None = True  # None: mutants not run
    skip_kind: str | None = None


STARTED = "2026-03-01T10:00:00.000001+00:00"


def write_bundle(root: Path, cid: str, results: list[Result], started: str = STARTED) -> Path:
    """Record one run of contract ``cid`` (its file as it is now) with the evidence writer."""
    rel = f"contracts/{cid}.yaml"
    data = (root / rel).read_bytes()
    declared = [f["id"] for f in yaml.safe_load(data).get("falsification_tests") or []]
    contract = ContractRun(
        contract_id=cid,
        path=rel,
        sha256=hashlib.sha256(data).hexdigest(),
        version="1.0.0",
        status="DRAFT",
        declared=declared,
        ship_blocking=[r.fid for r in results if r.ship_blocking],
    )
    falsifiers = [
        FalsifierResult(
            contract_id=cid,
            falsify_id=r.fid,
            verdict=r.verdict,
            ship_blocking=r.ship_blocking,
            skip_reason=r.skip_reason,
            skip_kind=r.skip_kind,
            mutant=None
            if r.killed is None
            else MutantResult("treechecks.faults:bad_init", Verdict.FALSIFIED if r.killed else Verdict.SURVIVED),
        )
        for r in results
    ]
    record = RunRecord(
        run_id=f"session-{started}",
        started_at=started,
        finished_at=started,
        contracts={cid: contract},
        results=falsifiers,
        mutants_enabled=True,
    )
    (outcome,) = write_run(record, root / "evidence", root, ENV)
    assert outcome.path is not None, outcome
    return outcome.path


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=pv", "-c", "user.email=pv@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """An empty git repository with a ``[tool.pv]`` configuration."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    # a checker package of its own: lint must not import this repository's (torch-heavy) falsifiers
    (root / "pyproject.toml").write_text(
        '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["repochecks"]\nfault_packages = ["engine"]\n'
    )
    (root / "contracts").mkdir()
    yield root


def commit_all(root: Path, message: str = "change") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def contract_data(cid: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "id": cid,
            "version": "1.0.0",
            "description": f"contract {cid}",
            "references": ["a note"],
            "changelog": [{"version": "1.0.0", "date": "2026-01-01", "change": "initial"}],
            **meta,
        }
    }
