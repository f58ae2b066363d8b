"""Run one falsifier (or one case of a parametrized one) and return its :class:`FalsifierResult`.

The steps, in order: the hardware gates (GPU, free GPU memory, a launch's process count), the
binding of params and fixtures to the checker, the call (in a thread or a forked process by
:mod:`pv.run_checker`, or launched on ``nproc`` ranks by :mod:`pv.launch`), the verdict, and with
mutants on the same call with the mutant's fault switched on.  Nothing here knows pytest: what a
run needs from it (fixture values, artifact folders) arrives as callables on :class:`FalsifierRun`,
and :mod:`pv.outcomes` turns the result into a pytest outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pv import expr
from pv.checkers import CheckerBindingError, resolve
from pv.config import PvConfig
from pv.devices import current_pinning, device_label, gpu_gate
from pv.hypothesis_support import PropertyRunner
from pv.launch import LaunchRequest, evaluate_launched, launch_arguments, launch_gate
from pv.model import FalsificationTest
from pv.requirements import cuda_present, current_machine, needs_gpu, wait_for_free_memory
from pv.results import FalsifierResult, MutantResult, Verdict
from pv.run_checker import BROKEN_REFERENCE, BindingError, FalsifierText, bind_arguments, evaluate_call, run_mutant

if TYPE_CHECKING:
    from pv.hypothesis_support import PropertyRunner

HARDWARE, OTHER = "hardware", "other"  # FalsifierResult.skip_kind


@dataclass(frozen=True)
class FalsifierRun:
    """Everything one run of one falsifier needs; ``result`` is filled in and returned."""

    label: str  # "<contract-id>::<item name>"
    falsifier: FalsificationTest
    params: dict[str, Any]  # the falsifier's params with its case's values laid over them
    seed: int
    result: FalsifierResult  # fresh (not_run), naming the case of a parametrized falsifier: what the run fills in
    settings: PvConfig
    contract_path: Path
    item_name: str  # how a launched rank finds the falsifier again in the contract
    contract_sha256: str | None
    rootpath: Path
    fixture: Callable[[str], Any]  # the value of a fixture the checker asks for, by name
    fixture_collisions: Callable[[Iterable[str]], list[str]]  # which of these names a fixture has
    artifact_dir: Callable[[str], Path]  # a fresh folder for the checker's files (a name suffix)
    property_runner: Callable[[], PropertyRunner]  # a fresh pv_hypothesis for the mutant run


class _Stop(Exception):
    """The run ended before the call: the result already says why."""


def _skip(result: FalsifierResult, reason: str, kind: str = OTHER) -> _Stop:
    """A checker's own skip, a missing package or CPU flag: ``other``, which backs no status."""
    result.verdict = Verdict.SKIPPED
    result.skip_reason = reason
    result.skip_kind = kind
    return _Stop()


def _error(result: FalsifierResult, message: str) -> _Stop:
    result.verdict = Verdict.ERROR
    result.message = message
    return _Stop()


def default_isolation(setting: str, falsifier: FalsificationTest, gpu: bool, cuda_here: bool) -> str:
    """``auto``: a forked process for ship-blocking falsifiers (a crash or a hang cannot take the
    session or its evidence down; measured overhead in docs/configuration.md), except those that need a GPU and
    every falsifier on a machine whose torch sees a CUDA device (``cuda_here``).  A child forked
    after the parent initialised CUDA can neither use CUDA nor run autograd, and on such a machine
    even CPU-only code touches CUDA: the engine's default device is the GPU, and torch's optimizers
    ask the CUDA stream whether it is capturing a graph whatever device their tensors are on."""
    if not hasattr(os, "fork"):  # Windows: no fork, so every checker runs in a thread
        return "thread"
    if setting != "auto":
        return setting
    return "process" if falsifier.ship_blocking and not gpu and not cuda_here else "thread"


def run_falsifier(run: FalsifierRun) -> FalsifierResult:
    """Run ``run`` to a verdict; never raises for anything the checker or the contract does."""
    with contextlib.suppress(_Stop):
        _run(run)
    return run.result


def _run(run: FalsifierRun) -> None:
    settings, f, result, params = run.settings, run.falsifier, run.result, run.params
    gpu = needs_gpu(f.requires)
    pinning = current_pinning()
    gate = gpu_gate(gpu, pinning)
    if gate:
        raise _skip(result, gate, HARDWARE)
    reasons, hardware, _ = wait_for_free_memory(f.requires, settings.vram_wait_s)
    if reasons:
        raise _skip(result, "; ".join(reasons), HARDWARE if hardware else OTHER)
    if f.check is None:
        raise _skip(result, "not bound: the falsifier has no `check:` (documentation only)")
    launch = f.launch
    if launch is not None:
        gate = launch_gate(launch.nproc, gpu, lambda: current_machine().gpu_count)
        if gate:
            raise _skip(result, gate, HARDWARE)
    if gpu:
        result.device = device_label(gpu, pinning)

    collisions = run.fixture_collisions(params)
    if collisions:
        raise _error(
            result,
            f"ERROR {run.label}: param(s) {', '.join(collisions)} have the name of a pytest fixture; a contract's "
            "params may never replace a fixture (PV127: rename the param)",
        )
    try:
        spec = resolve(f.check, settings.checker_packages)
        if launch is None:
            kwargs = bind_arguments(spec.func, params, run.fixture)
        else:  # the ranks get params and pv_artifacts; the folder also receives every rank's log
            kwargs = {"pv_artifacts": run.artifact_dir("")}
            launch_arguments(spec.func, params, kwargs["pv_artifacts"])
    except (CheckerBindingError, BindingError) as exc:
        raise _error(result, f"ERROR {run.label}: cannot bind checker {f.check}: {exc}") from None
    except Exception as exc:  # a fixture that failed to set up is a harness defect, not a finding
        raise _error(
            result, f"ERROR {run.label}: a fixture of checker {f.check} failed: {type(exc).__name__}: {exc}"
        ) from None

    text = FalsifierText(run.label, f.rule, f.prediction, f.if_fails)
    timeout = f.timeout_s if f.timeout_s is not None else settings.timeout_s
    expect = f.expect or ""
    isolation = (
        "launch" if launch is not None else default_isolation(f.isolation or settings.isolation, f, gpu, cuda_present())
    )
    result.timeout_s = timeout if timeout and timeout > 0 else None
    result.isolation = isolation

    # what every call is judged by, in-process or launched
    judged: dict[str, Any] = {
        "observes": spec.observes,
        "expect": expect,
        "params": params,
        "text": text,
        "timeout_s": timeout,
        "allow_nonfinite": f.allow_nonfinite,
    }

    def evaluate(arguments: dict[str, Any]) -> Any:
        if launch is not None:
            request = LaunchRequest(
                run.contract_path,
                run.item_name,
                launch.nproc,
                settings.checker_packages,
                run.seed,
                run.contract_sha256,
                run.rootpath,
            )
            return evaluate_launched(request, artifacts=arguments["pv_artifacts"], **judged)
        return evaluate_call(spec.func, arguments, seed=run.seed, isolation=isolation, **judged)

    ev = evaluate(kwargs)
    result.verdict = ev.verdict
    result.observations = ev.observations
    result.noise = ev.noise
    result.duration_s = ev.duration_s
    result.message = ev.message
    artifacts = kwargs.get("pv_artifacts")
    if isinstance(artifacts, Path):
        result.artifacts = sorted(str(p) for p in artifacts.rglob("*") if p.is_file())
    runners = [v for v in kwargs.values() if isinstance(v, PropertyRunner)]
    if runners:
        result.hypothesis = runners[0].summary()
        unmatched = runners[0].unmatched_examples()
        if unmatched and ev.verdict is Verdict.SURVIVED:
            # A pasted example that replays nowhere would leave the falsifier looking covered.
            # (After a falsified run a checker may have stopped before the property it fits.)
            raise _error(result, f"ERROR {run.label}: " + "; ".join(unmatched))

    if ev.verdict is Verdict.SKIPPED:
        raise _skip(result, ev.skip_reason or "skipped by the checker")
    if ev.verdict is Verdict.FALSIFIED:
        extra = "\n".join(r.failure_text() for r in runners if r.failure_text())
        result.message = ev.message + ("\n" + extra if extra else "")
    if ev.verdict is not Verdict.SURVIVED or not (settings.mutants and f.mutant):
        return

    # Per-run fixtures are fresh for the mutant run, so it never sees the first run's files.
    overrides = {
        "pv_artifacts": run.artifact_dir("-mutant"),
        "pv_hypothesis": run.property_runner(),
        "tmp_path": run.artifact_dir("-mutant-tmp"),
    }
    try:
        mutant_kwargs = (
            bind_arguments(spec.func, params, run.fixture, overrides)
            if launch is None
            else {"pv_artifacts": overrides["pv_artifacts"]}
        )
        result.mutant = run_mutant(f.mutant, lambda: evaluate(mutant_kwargs), settings.mutant_packages)
    except Exception as exc:  # the harness could not run the mutant: not a kill
        message = f"mutant {f.mutant} could not be run: {type(exc).__name__}: {exc}"
        result.mutant = MutantResult(mutant=f.mutant, verdict=Verdict.ERROR, message=message)


def mutant_failure(run: FalsifierRun) -> tuple[str, str] | None:
    """``("broken" | "vacuous" | "inconclusive", text)`` when a survived run's mutant was not
    killed, else None; ``inconclusive`` when the mutant run's noise left its bound undecided.

    A case need not kill the mutant alone: a parametrized falsifier kills it when it is falsified
    as a whole, by any case or its aggregate (:mod:`pv.cases`, judged at session end)."""

    result = run.result
    mutant = result.mutant
    if result.verdict is not Verdict.SURVIVED or mutant is None or mutant.killed or result.case is not None:
        return None
    if mutant.message.startswith(BROKEN_REFERENCE):
        return "broken", f"BROKEN {run.label}: {mutant.message}"
    if mutant.undecided:
        return "inconclusive", f"survived, but its mutant run was inconclusive: {mutant.message.splitlines()[-1]}"
    return "vacuous", _vacuous_text(run)


def _vacuous_text(run: FalsifierRun) -> str:
    result, f = run.result, run.falsifier
    mutant = result.mutant
    assert mutant is not None
    lines = [f"VACUOUS {run.label}: not killed by its mutant {mutant.mutant} (mutant run: {mutant.verdict.value})"]
    if mutant.verdict is Verdict.SURVIVED:
        lines.append("  the prediction held with the fault switched on, so this falsifier cannot detect it")
        env = {**run.params, **mutant.observations}
        try:
            lines.append(f"  expect:       {f.expect}")
            lines.append(f"  with values:  {expr.parse(f.expect or '').substitute(env)}")
        except expr.ExprError:
            pass
        shown = json.dumps(mutant.observations, sort_keys=True, default=repr)
        lines.append(f"  observations under the mutant: {shown}")
    else:
        lines.append("  " + mutant.message.replace("\n", "\n  "))
    lines.append(f"  the unmutated run survived with: {json.dumps(result.observations, sort_keys=True, default=repr)}")
    return "\n".join(lines)
