"""Running a falsifier's checker under ``torchrun`` (``launch: {nproc: N}`` in the contract).

Parent side (the pytest plugin): :func:`evaluate_launched` runs ::

    python -m torch.distributed.run --standalone --nproc_per_node=N -m pv.launch <contract> <FALSIFY-ID>

in the project root, waits at most the falsifier's timeout (then kills the whole process group),
reads what rank 0 reported and judges it exactly as an in-process checker is judged
(:mod:`pv.run_checker`): a skip is a skip, an exception or a malformed observation is an error,
``expect`` decides between survived and falsified.  Every rank's output lands in
``<artifacts>/logs/rank-<r>.log`` (and torchrun's own in ``logs/torchrun.log``), so the evidence
bundle records them as artifacts.

Child side (``python -m pv.launch``, one per rank): redirect stdout/stderr to the rank's log,
load the contract, check its bytes are the ones the parent collected, join the process group
(gloo, or NCCL when the falsifier needs CUDA and CUDA is there), seed, call the checker; rank 0
writes its observations to the JSON file named by ``PV_LAUNCH_RESULT``.

A launched checker receives its ``params`` and, if it asks, ``pv_artifacts`` (rank 0 gets the
falsifier's artifact folder, rank r > 0 a ``rank-<r>/`` folder inside it).  Other pytest fixtures
cannot cross the process boundary; asking for one is a binding error.  A mutant reaches the
ranks through ``PV_FAULTS``, which the harness sets while a mutant runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pv.cases import case_params, find_case, split_name
from pv.checkers import resolve
from pv.loader import load_contract_file
from pv.requirements import needs_gpu
from pv.results import Verdict
from pv.run_checker import (
    BindingError,
    Evaluation,
    FalsifierText,
    _is_skip,
    bind_arguments,
    judge,
    normalise_observations,
    seed_everything,
)

RESULT_ENV = "PV_LAUNCH_RESULT"
ARTIFACTS_ENV = "PV_LAUNCH_ARTIFACTS"
PACKAGES_ENV = "PV_LAUNCH_PACKAGES"
SEED_ENV = "PV_LAUNCH_SEED"
SHA256_ENV = "PV_LAUNCH_SHA256"
LOGS_DIR = "logs"
TORCHRUN_LOG = "torchrun.log"
LAUNCH_FIXTURES = frozenset({"pv_artifacts"})
KILL_GRACE_S = 5.0
TAIL_LINES = 25


class LaunchError(RuntimeError):
    """The child could not set up the falsifier (contract changed, checker missing, ...)."""


@dataclass(frozen=True)
class LaunchRequest:
    """Which falsifier to run under torchrun, and how."""

    contract: Path
    falsify_id: str  # the item's name: FALSIFY-X-001, or FALSIFY-X-001[<case>] for one case
    nproc: int
    checker_packages: tuple[str, ...]
    seed: int
    sha256: str | None = None  # of the contract bytes the parent collected; the child refuses others
    cwd: Path | None = None  # the project root: checker packages import from there


def rank_log(artifacts: Path, rank: int) -> Path:
    return artifacts / LOGS_DIR / f"rank-{rank}.log"


def rank_artifacts(artifacts: Path, rank: int) -> Path:
    return artifacts if rank == 0 else artifacts / f"rank-{rank}"


def child_arguments(func: Callable[..., Any], params: Mapping[str, Any], artifacts: Path) -> dict[str, Any]:
    """The keyword arguments a rank calls the checker with: its params, plus ``pv_artifacts``.

    Binding is in-process binding (:func:`pv.run_checker.bind_arguments`) with one difference: the
    only fixture that can reach a torchrun rank is ``pv_artifacts``; any other raises
    :class:`BindingError`.
    """

    def fixture(name: str) -> Any:
        if name not in LAUNCH_FIXTURES:
            raise BindingError(
                f"checker parameter {name!r} is a pytest fixture, which cannot reach a torchrun rank; "
                f"a launched checker takes its params and {', '.join(sorted(LAUNCH_FIXTURES))} only"
            )
        return artifacts

    return bind_arguments(func, params, fixture)


def launch_arguments(func: Callable[..., Any], params: Mapping[str, Any], artifacts: Path) -> dict[str, Any]:
    """Check that ``func`` can run launched; the fixtures it gets (only ``pv_artifacts``).

    Raises :class:`BindingError` as :func:`child_arguments` does.
    """
    return {k: v for k, v in child_arguments(func, params, artifacts).items() if k not in params}


def launch_gate(nproc: int, needs_gpu: bool, gpu_count: Callable[[], int]) -> str | None:
    """Why a CUDA falsifier with ``nproc`` ranks cannot launch here (NCCL wants a GPU per rank)."""
    if not needs_gpu:
        return None
    have = gpu_count()
    if have >= nproc:
        return None
    return f"launch: {{nproc: {nproc}}} needs {nproc} GPUs (one per rank), this process sees {have}"


def torchrun_command(req: LaunchRequest) -> list[str]:
    # torch.distributed.run is torchrun's module: the same interpreter as pytest, whatever PATH says.
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={req.nproc}",
        "-m",
        "pv.launch",
        str(req.contract),
        req.falsify_id,
    ]


def _child_env(req: LaunchRequest, artifacts: Path, result_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The ranks import checkers (and anything a test put on sys.path) the way this process does.
    paths = [p for p in sys.path if p]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(paths),
            RESULT_ENV: str(result_path),
            ARTIFACTS_ENV: str(artifacts),
            PACKAGES_ENV: ",".join(req.checker_packages),
            SEED_ENV: str(req.seed),
        }
    )
    if req.sha256:
        env[SHA256_ENV] = req.sha256
    else:
        env.pop(SHA256_ENV, None)
    return env


@dataclass
class LaunchOutcome:
    returncode: int | None  # None: killed at the deadline
    timed_out: bool
    report: dict[str, Any] | None  # what rank 0 wrote, if anything
    duration_s: float
    logs: list[Path]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_launched(req: LaunchRequest, artifacts: Path, timeout_s: float | None) -> LaunchOutcome:
    """Start torchrun, wait for it (at most ``timeout_s``), collect rank 0's report and the logs."""
    logs_dir = artifacts / LOGS_DIR
    logs_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pv-launch-") as tmp:
        result_path = Path(tmp) / "rank0.json"
        start = time.perf_counter()
        with open(logs_dir / TORCHRUN_LOG, "wb") as agent_log:
            # A session of its own: at the deadline the whole tree (agent and ranks) is killed.
            proc = subprocess.Popen(
                torchrun_command(req),
                cwd=req.cwd,
                env=_child_env(req, artifacts, result_path),
                stdin=subprocess.DEVNULL,
                stdout=agent_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            timed_out = False
            try:
                proc.wait(timeout_s if timeout_s and timeout_s > 0 else None)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            except BaseException:  # KeyboardInterrupt: leave no ranks behind
                _kill_group(proc)
                raise
        duration = time.perf_counter() - start
        report = None
        if result_path.is_file():
            try:
                report = json.loads(result_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                report = None
    logs = sorted(p for p in logs_dir.iterdir() if p.is_file())
    return LaunchOutcome(None if timed_out else proc.returncode, timed_out, report, duration, logs)


def _tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").rstrip()
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _failed_logs(logs: Sequence[Path], *, agent_fallback: bool = True) -> str:
    """The tails of the rank logs that show a traceback (else, optionally, of torchrun's own log)."""
    failed = [p for p in logs if "Traceback" in _tail(p, 10_000) and p.name != TORCHRUN_LOG]
    chosen = failed or ([p for p in logs if p.name == TORCHRUN_LOG] if agent_fallback else [])
    parts = []
    for p in chosen:
        body = _tail(p)
        if body:
            parts.append(f"--- {p.name} (last lines) ---\n{body}")
    return "\n".join(parts)


def evaluate_launched(
    req: LaunchRequest,
    *,
    artifacts: Path,
    observes: Sequence[str],
    expect: str,
    params: Mapping[str, Any],
    text: FalsifierText,
    timeout_s: float | None,
    allow_nonfinite: Sequence[str] = (),
) -> Evaluation:
    """Run the falsifier under torchrun and judge rank 0's observations like an in-process call."""

    out = run_launched(req, artifacts, timeout_s)
    d = out.duration_s
    where = f"under torchrun --nproc_per_node={req.nproc}"
    if out.timed_out:
        message = (
            f"ERROR {text.label}: checker timed out after {timeout_s:g} s {where} (torchrun and every rank were killed)"
        )
        tails = _failed_logs(out.logs, agent_fallback=False)  # the agent only logs being killed
        return Evaluation(Verdict.ERROR, message=message + ("\n" + tails if tails else ""), duration_s=d)
    report = out.report or {}
    status = report.get("status")
    if status == "skipped":
        reason = str(report.get("reason") or "skipped by the checker")
        return Evaluation(Verdict.SKIPPED, message=reason, duration_s=d, skip_reason=reason)
    if status == "error":
        # Rank 0's error may only echo another rank's (a collective whose peer died): show theirs too.
        others = _failed_logs([p for p in out.logs if p.name != rank_log(artifacts, 0).name], agent_fallback=False)
        return Evaluation(
            Verdict.ERROR,
            duration_s=d,
            message=(
                f"ERROR {text.label}: the checker raised on rank 0 {where} (an error, not a falsification)\n"
                + str(report.get("error", "")).rstrip()
                + ("\n" + others if others else "")
            ),
        )
    if out.returncode != 0 or status != "ok":
        why = f"exited with status {out.returncode}" if out.returncode != 0 else "rank 0 reported nothing"
        tails = _failed_logs(out.logs)
        return Evaluation(
            Verdict.ERROR,
            duration_s=d,
            message=(
                f"ERROR {text.label}: torchrun {why} {where} (an error, not a falsification)"
                + ("\n" + tails if tails else "")
            ),
        )
    obs, problems, noise = normalise_observations(report.get("observations"), observes)
    problems = [*report.get("problems", []), *problems]
    noise = {**(report.get("noise") or {}), **noise}
    if problems:
        return Evaluation(
            Verdict.ERROR,
            observations=obs,
            duration_s=d,
            message=f"ERROR {text.label}: malformed observations: " + "; ".join(problems),
        )
    verdict, message = judge(expect, {**params, **obs}, text, obs, allow_nonfinite, noise)
    return Evaluation(verdict, observations=obs, message=message, duration_s=d, noise=noise)


# --- the child: one torchrun rank ----------------------------------------------------------------


def _redirect_output(path: Path) -> None:
    """Send this process's stdout and stderr (C level included: NCCL, gloo) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115


def _write_report(path: Path, report: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, sort_keys=True, default=repr), encoding="utf-8")
    os.replace(tmp, path)


def _load_falsifier(contract: Path, falsify_id: str, expected_sha: str | None) -> Any:
    loaded = load_contract_file(contract)
    if expected_sha and loaded.sha256 != expected_sha:
        raise LaunchError(f"{contract} changed after collection (sha256 {loaded.sha256} != {expected_sha})")
    if loaded.contract is None:
        raise LaunchError(f"{contract} does not load: " + "; ".join(d.format() for d in loaded.diagnostics))
    falsifier = loaded.contract.falsifier(falsify_id)
    if falsifier is None or falsifier.check is None:
        raise LaunchError(f"{contract} has no bound falsifier {falsify_id}")
    return falsifier


def _join_group(needs_gpu: bool, local_rank: int) -> Any:
    # torch loads only in a launched child that joins a process group
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return dist
    if needs_gpu and torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    return dist


def child_main(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """One rank: run the checker, rank 0 reports.  Exit status 0 unless this rank failed."""
    env = os.environ if environ is None else environ
    if len(argv) != 2:
        print("usage: torchrun ... -m pv.launch <contract.yaml> <FALSIFY-ID>", file=sys.stderr)
        return 2
    contract, falsify_id = Path(argv[0]), argv[1]
    rank = int(env.get("RANK", "0"))
    local_rank = int(env.get("LOCAL_RANK", str(rank)))
    artifacts = Path(env[ARTIFACTS_ENV])
    result_path = Path(env[RESULT_ENV])
    _redirect_output(rank_log(artifacts, rank))
    print(f"pv.launch: rank {rank} of {env.get('WORLD_SIZE', '1')}: {contract.name}::{falsify_id}", flush=True)
    dist = None
    try:
        fid, case_id = split_name(falsify_id)  # a case of a parametrized falsifier: FALSIFY-X-001[<case>]
        falsifier = _load_falsifier(contract, fid, env.get(SHA256_ENV))
        params = case_params(falsifier, find_case(falsifier, case_id) if case_id is not None else None)
        packages = [p for p in env.get(PACKAGES_ENV, "").split(",") if p]
        spec = resolve(falsifier.check, packages)
        own = rank_artifacts(artifacts, rank)
        own.mkdir(parents=True, exist_ok=True)
        kwargs = child_arguments(spec.func, params, own)
        dist = _join_group(needs_gpu(falsifier.requires), local_rank)
        seed_everything(int(env.get(SEED_ENV, "0")))
        try:
            value = spec.func(**kwargs)
        except BaseException as exc:
            if _is_skip(exc):
                if rank == 0:
                    _write_report(result_path, {"status": "skipped", "reason": str(getattr(exc, "msg", exc))})
                return 0
            raise
        if rank == 0:
            obs, problems, noise = normalise_observations(value, spec.observes)
            _write_report(result_path, {"status": "ok", "observations": obs, "noise": noise, "problems": problems})
        return 0
    except Exception:
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        if rank == 0:
            _write_report(result_path, {"status": "error", "error": text})
        return 1
    finally:
        if dist is not None and dist.is_initialized():
            dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    raise SystemExit(child_main(sys.argv[1:]))
