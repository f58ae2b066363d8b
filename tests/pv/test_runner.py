"""pv.runner: one falsifier run to a result, with no pytest item in sight."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from pv.config import PvConfig
from pv.hypothesis_support import PropertyRunner
from pv.loader import load_contract_bytes
from pv.results import FalsifierResult, Verdict
from pv.runner import FalsifierRun, mutant_failure, run_falsifier

SYSTEM = """
from pv.checkers import checker
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("runnertoy")
FAULTS.register("doubled", "the value is doubled")
FAULTS.register("unused", "nothing looks at this")


@checker(observes=["value"])
def measure(scale=1.0):
    return {"value": scale * (2.0 if FAULTS.active("doubled") else 1.0)}


@checker(observes=["value"])
def with_tmp(tmp_path, scale=1.0):
    return {"value": scale}
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "runnertoy").mkdir()
    (tmp_path / "runnertoy" / "__init__.py").write_text(SYSTEM)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "runnertoy"
    for name in [m for m in sys.modules if m.startswith("runnertoy")]:
        del sys.modules[name]


def make_run(
    tmp_path: Path, falsifier_yaml: str, *, mutants: bool = True, fixtures: Iterable[str] = ()
) -> FalsifierRun:
    text = textwrap.dedent(
        """
        metadata: {id: runner-toy, version: 1.0.0, description: x, references: [x]}
        proof_obligations: [{id: OB-1, type: bound, property: x}]
        falsification_tests:
        """
    ) + textwrap.indent(textwrap.dedent(falsifier_yaml), "  ")
    loaded = load_contract_bytes(text.encode(), tmp_path / "runner-toy.yaml")
    assert loaded.contract is not None, loaded.diagnostics
    f = loaded.contract.falsification_tests[0]
    settings = PvConfig(
        root=tmp_path, contracts=tmp_path, checker_packages=("runnertoy",), evidence=tmp_path / "ev", mutants=mutants
    )
    counter = iter(range(100))

    def artifact_dir(suffix: str) -> Path:
        folder = tmp_path / f"art{next(counter)}{suffix}"
        folder.mkdir()
        return folder

    return FalsifierRun(
        label=f"runner-toy::{f.id}",
        falsifier=f,
        params=dict(f.params),
        seed=0,
        result=FalsifierResult(
            contract_id="runner-toy", falsify_id=f.id, verdict=Verdict.NOT_RUN, ship_blocking=f.ship_blocking
        ),
        settings=settings,
        contract_path=tmp_path / "runner-toy.yaml",
        item_name=f.id,
        contract_sha256=loaded.sha256,
        rootpath=tmp_path,
        fixture=lambda name: artifact_dir("-" + name),
        fixture_collisions=lambda names: sorted(set(names) & set(fixtures)),
        artifact_dir=artifact_dir,
        property_runner=PropertyRunner,
    )


FALSIFIER = """
- id: FALSIFY-RT-001
  obligation: OB-1
  rule: r
  prediction: p
  check: runnertoy:measure
  params: {{scale: {scale}}}
  expect: "value <= 1.5"
  ship_blocking: true
  isolation: thread
  mutant: runnertoy:{mutant}
"""


def test_survives_and_kills_its_mutant(tmp_path: Path, package: str) -> None:
    run = make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="doubled"))
    result = run_falsifier(run)
    assert result is run.result
    assert result.verdict is Verdict.SURVIVED and result.observations == {"value": 1.0}
    assert result.mutant is not None and result.mutant.killed and result.mutant.observations == {"value": 2.0}
    assert mutant_failure(run) is None


def test_falsified_when_the_prediction_fails(tmp_path: Path, package: str) -> None:
    run = make_run(tmp_path, FALSIFIER.format(scale=3.0, mutant="doubled"))
    result = run_falsifier(run)
    assert result.verdict is Verdict.FALSIFIED and "value <= 1.5" in result.message
    assert result.mutant is None  # a falsified run never runs its mutant


def test_a_mutant_nothing_notices_is_vacuous(tmp_path: Path, package: str) -> None:
    run = make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="unused"))
    assert run_falsifier(run).verdict is Verdict.SURVIVED
    failure = mutant_failure(run)
    assert failure is not None and failure[0] == "vacuous"
    assert "not killed by its mutant runnertoy:unused" in failure[1]
    assert not make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="unused"), mutants=False).settings.mutants


def test_a_mutant_that_does_not_exist_is_broken(tmp_path: Path, package: str) -> None:
    run = make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="no_such_fault"))
    run_falsifier(run)
    failure = mutant_failure(run)
    assert failure is not None and failure[0] == "broken"


def test_a_param_named_like_a_fixture_is_an_error_not_a_run(tmp_path: Path, package: str) -> None:
    run = make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="doubled"), fixtures=["scale"])
    result = run_falsifier(run)
    assert result.verdict is Verdict.ERROR and "have the name of a pytest fixture" in result.message
    assert result.observations == {}


def test_gpu_falsifiers_skip_as_hardware_without_a_gpu(tmp_path: Path, package: str) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run = make_run(tmp_path, FALSIFIER.format(scale=1.0, mutant="doubled") + "  requires: [cuda]\n")
    result = run_falsifier(run)
    assert (result.verdict, result.skip_kind) == (Verdict.SKIPPED, "hardware")


@pytest.mark.parametrize(("cuda", "isolation"), [(False, "process"), (True, "thread")])
def test_auto_isolation_forks_only_where_torch_sees_no_cuda(
    tmp_path: Path, package: str, monkeypatch: pytest.MonkeyPatch, cuda: bool, isolation: str
) -> None:
    # A child forked after the parent touched CUDA can use neither CUDA nor autograd, and on a
    # GPU machine code under test touches CUDA unasked: every falsifier there runs in a thread.
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    auto = FALSIFIER.format(scale=1.0, mutant="doubled").replace("  isolation: thread\n", "")
    result = run_falsifier(make_run(tmp_path, auto))
    assert result.verdict is Verdict.SURVIVED and result.isolation == isolation
    assert result.mutant is not None and result.mutant.killed


def test_an_explicit_isolation_is_kept_on_a_cuda_machine(
    tmp_path: Path, package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    forked = FALSIFIER.format(scale=1.0, mutant="doubled").replace("isolation: thread", "isolation: process")
    assert run_falsifier(make_run(tmp_path, forked)).isolation == "process"
