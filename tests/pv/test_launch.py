"""``launch: {nproc: 2}``: the plugin runs the checker under torchrun (gloo, CPU) and judges rank 0."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pv.launch import LaunchRequest, child_arguments, launch_arguments, launch_gate, torchrun_command
from pv.run_checker import BindingError
from tests.pv.toy import ToyProject, falsifier


@pytest.fixture
def toy(launch_toy: ToyProject) -> ToyProject:
    """Here the toy project has launched and device-probe checkers too (tests.pv.launch_toy)."""
    return launch_toy


CHECK = "toyfalsifiers.launched:"
LAUNCH = {"nproc": 2}


def _by_id(toy: ToyProject) -> dict[str, dict]:
    return {r["falsify_id"]: r for r in toy.run_record()["results"]}


def test_two_ranks_report_through_rank_0_and_every_rank_log_is_evidence(toy: ToyProject) -> None:
    toy.contract(
        "ddp",
        [
            falsifier(
                "FALSIFY-DDP-001",
                check=CHECK + "gather",
                launch=LAUNCH,
                ship_blocking=True,
                expect="world == 2 and rank_sum == 1 and value == 1.0",
                mutant="toysystem:off_by_one",
            ),
        ],
    )
    result = toy.pytester.runpytest("contracts", "--pv-mutants", "--pv-evidence", "--pv-evidence-dir", "evidence")
    result.assert_outcomes(passed=1)
    r = _by_id(toy)["FALSIFY-DDP-001"]
    assert r["verdict"] == "survived"
    assert r["observations"] == {"world": 2, "rank_sum": 1.0, "value": 1.0, "backend": "gloo"}
    # The fault reached both ranks through PV_FAULTS: the mean value moved, the mutant was killed.
    assert r["mutant"]["verdict"] == "falsified" and r["mutant"]["observations"]["value"] == 2.0
    root = Path(next(a for a in r["artifacts"] if a.endswith("/note.txt") and "/rank-1/" not in a)).parent
    names = {Path(a).relative_to(root).as_posix() for a in r["artifacts"]}
    assert names == {"logs/rank-0.log", "logs/rank-1.log", "logs/torchrun.log", "note.txt", "rank-1/note.txt"}
    rank1 = next(a for a in r["artifacts"] if a.endswith("rank-1.log"))
    assert "hello from rank 1" in Path(rank1).read_text()
    assert Path(next(a for a in r["artifacts"] if a.endswith("rank-1/note.txt"))).read_text() == "rank 1\n"

    bundle_file = next((toy.root / "evidence" / "ddp").glob("*/bundle.json"))
    entry = json.loads(bundle_file.read_text())["falsifiers"][0]
    assert entry["verdict"] == "survived" and entry["device"] == "cpu"
    logged = [a for a in entry["artifacts"] if a.endswith((".log",))]
    assert any(a.endswith("rank-0.log") for a in logged) and any(a.endswith("rank-1.log") for a in logged)
    for rel in logged:
        assert (bundle_file.parent / rel).is_file()


def test_each_case_of_a_launched_falsifier_reaches_its_ranks_with_its_own_params(toy: ToyProject) -> None:
    toy.contract(
        "ddp",
        [
            falsifier(
                "FALSIFY-DDP-001",
                check=CHECK + "gather",
                launch=LAUNCH,
                expect="world == 2 and value == scale",
                parametrize={"scale": [1.0, 3.0]},
                aggregate="value == [1.0, 3.0]",
            ),
        ],
    )
    result = toy.pytester.runpytest("contracts", "--pv-no-evidence", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*FALSIFY-DDP-001[[]3.0[]] PASSED*"])
    r = _by_id(toy)["FALSIFY-DDP-001"]
    assert r["verdict"] == "survived" and [c["isolation"] for c in r["cases"]] == ["launch", "launch"]
    assert r["observations"]["value"] == [1.0, 3.0]


def test_launch_failures_are_errors_and_skips_as_in_process(toy: ToyProject) -> None:
    toy.contract(
        "bad",
        [
            falsifier("FALSIFY-BAD-001", check=CHECK + "rank1_crashes", launch=LAUNCH, expect="value == 1.0"),
            falsifier(
                "FALSIFY-BAD-002",
                check=CHECK + "sleeps",
                launch=LAUNCH,
                expect="value == 1.0",
                params={"seconds": 120},
                timeout_s=12,
            ),
            falsifier("FALSIFY-BAD-003", check=CHECK + "half_observed", launch=LAUNCH, expect="value == 1.0"),
            falsifier("FALSIFY-BAD-004", check=CHECK + "skips_itself", launch=LAUNCH, expect="value == 1.0"),
            falsifier("FALSIFY-BAD-005", check=CHECK + "wants_fixture", launch=LAUNCH, expect="value == 1.0"),
        ],
    )
    result = toy.pytester.runpytest("contracts", "--pv-no-evidence")
    result.assert_outcomes(failed=4, skipped=1)
    r = _by_id(toy)
    crash = r["FALSIFY-BAD-001"]
    assert crash["verdict"] == "error"
    assert "rank 1 lost its shard" in crash["message"] and "torchrun" in crash["message"]

    hang = r["FALSIFY-BAD-002"]
    assert hang["verdict"] == "error" and "timed out after 12 s" in hang["message"]
    assert hang["duration_s"] < 40  # killed at the deadline, not after the 120 s sleep
    pids = [int(Path(a).name.removeprefix("pid-")) for a in hang["artifacts"] if Path(a).name.startswith("pid-")]
    assert len(pids) == 2
    assert not [pid for pid in pids if _running(pid)]  # both ranks were killed

    half = r["FALSIFY-BAD-003"]
    assert half["verdict"] == "error" and "missing declared observation(s): spread" in half["message"]
    skip = r["FALSIFY-BAD-004"]
    assert skip["verdict"] == "skipped" and skip["skip_reason"] == "the toy interconnect is down"
    binding = r["FALSIFY-BAD-005"]
    assert binding["verdict"] == "error" and "cannot reach a torchrun rank" in binding["message"]


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan waiting for a reaper runs no code)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _checker(pv_artifacts: Path, n: int, scale: float = 1.0) -> dict:
    return {"n": n}


def _needs_fixture(tmp_path: Path) -> dict:
    return {}


def test_launch_binding_accepts_params_defaults_and_pv_artifacts(tmp_path: Path) -> None:
    assert launch_arguments(_checker, {"n": 3, "seed": 1}, tmp_path) == {"pv_artifacts": tmp_path}
    assert child_arguments(_checker, {"n": 3, "seed": 1}, tmp_path) == {"n": 3, "pv_artifacts": tmp_path}
    with pytest.raises(BindingError, match="cannot reach a torchrun rank"):
        launch_arguments(_needs_fixture, {}, tmp_path)
    with pytest.raises(BindingError, match="is not a parameter of the checker"):
        launch_arguments(_checker, {"n": 3, "bogus": 1}, tmp_path)


def test_cuda_launch_needs_a_gpu_per_rank() -> None:
    assert launch_gate(2, needs_gpu=False, gpu_count=lambda: 0) is None
    assert launch_gate(2, needs_gpu=True, gpu_count=lambda: 2) is None
    reason = launch_gate(4, needs_gpu=True, gpu_count=lambda: 1)
    assert reason == "launch: {nproc: 4} needs 4 GPUs (one per rank), this process sees 1"


def test_torchrun_command_uses_this_interpreter(tmp_path: Path) -> None:
    import sys

    cmd = torchrun_command(LaunchRequest(tmp_path / "c.yaml", "FALSIFY-C-001", 3, ("pkg",), 0))
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--standalone" in cmd and "--nproc_per_node=3" in cmd
    assert cmd[-4:] == ["-m", "pv.launch", str(tmp_path / "c.yaml"), "FALSIFY-C-001"]
