"""xdist worker -> device pinning, with fake device lists (no GPU needed)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from pv.devices import (
    DeviceList,
    Pinning,
    available_devices,
    current_pinning,
    device_for_worker,
    device_label,
    gpu_gate,
    parse_device_list,
    pin_this_worker,
    plan,
    worker_index,
)
from tests.pv.toy import ToyProject, falsifier


@pytest.fixture
def toy(launch_toy: ToyProject) -> ToyProject:
    """Here the toy project has launched and device-probe checkers too (tests.pv.launch_toy)."""
    return launch_toy


LEAN = ("-p", "no:benchmark", "-p", "no:anyio", "-p", "no:hypothesispytest")


@pytest.mark.parametrize(
    ("text", "devices"),
    [
        ("0,1,2,3", ("0", "1", "2", "3")),
        (" 2 , 5 ", ("2", "5")),
        ("GPU-aa11,GPU-bb22", ("GPU-aa11", "GPU-bb22")),
        ("", ()),
        ("none", ()),
        ("cpu", ()),
        ("-1", ()),
        ("0,-1,2", ("0",)),  # CUDA stops at the first invalid entry
    ],
)
def test_device_lists_parse_like_cuda_visible_devices(text: str, devices: tuple[str, ...]) -> None:
    assert parse_device_list(text) == devices


def test_the_device_list_comes_from_pv_devices_then_visible_devices_then_nvml() -> None:
    def never() -> int | None:
        raise AssertionError("NVML must not be asked when the environment answers")

    assert available_devices({"PV_DEVICES": "1,2", "CUDA_VISIBLE_DEVICES": "0"}, never) == DeviceList(
        ("1", "2"), "PV_DEVICES"
    )
    assert available_devices({"CUDA_VISIBLE_DEVICES": "4,6"}, never) == DeviceList(("4", "6"), "CUDA_VISIBLE_DEVICES")
    assert available_devices({}, lambda: 3) == DeviceList(("0", "1", "2"), "nvml")
    assert available_devices({}, lambda: 0) == DeviceList((), "nvml")
    assert available_devices({}, lambda: None) == DeviceList(None, "unknown")


def test_worker_k_gets_device_k_mod_n() -> None:
    four = ("0", "1", "2", "3")
    got = [device_for_worker(f"gw{k}", four) for k in range(6)]
    assert got == ["0", "1", "2", "3", "0", "1"]
    assert [device_for_worker(f"gw{k}", ("5",)) for k in range(3)] == ["5", "5", "5"]  # one GPU: shared
    assert device_for_worker("gw2", ()) is None  # no GPU: CPU
    assert worker_index("gw12") == 12
    for bad in ("master", "gw", "gwx", "3"):
        with pytest.raises(ValueError, match="not a pytest-xdist worker id"):
            worker_index(bad)


def test_plan_writes_one_visible_device_per_worker() -> None:
    env = {"PYTEST_XDIST_TESTRUNUID": "run1"}
    p = plan("gw3", DeviceList(("0", "1"), "nvml"), env)
    assert p is not None and p.label == "cuda:1" and p.has_gpu
    assert p.env == {
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "PV_PINNED_DEVICE": "cuda:1",
        "PV_PINNED_FOR": "run1:gw3",
    }
    # The user's own order is kept, and a list from the environment is already in CUDA's numbering.
    own_order = plan("gw0", DeviceList(("0",), "nvml"), {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    from_env = plan("gw0", DeviceList(("7",), "PV_DEVICES"), {})
    assert own_order is not None and "CUDA_DEVICE_ORDER" not in own_order.env
    assert from_env is not None and "CUDA_DEVICE_ORDER" not in from_env.env
    cpu = plan("gw0", DeviceList((), "PV_DEVICES"), {})
    assert cpu is not None and cpu.label == "cpu" and cpu.env["CUDA_VISIBLE_DEVICES"] == ""
    assert plan("gw0", DeviceList(None, "unknown"), {}) is None  # unknown: the worker keeps what it has


def test_pinning_applies_once_per_run_and_only_in_workers() -> None:
    env = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_TESTRUNUID": "a", "PV_DEVICES": "4,5,6"}
    first = pin_this_worker(env, lambda: None)
    assert first is not None and env["CUDA_VISIBLE_DEVICES"] == "5"
    env["PV_DEVICES"] = "9"  # a second call in the same run does not re-plan
    assert pin_this_worker(env, lambda: None) == Pinning("gw1", "5")
    assert current_pinning(env) == Pinning("gw1", "5")
    # A nested pytest run (new run id) pins its own workers from what it inherited.
    env.update({"PYTEST_XDIST_TESTRUNUID": "b", "PYTEST_XDIST_WORKER": "gw0"})
    again = pin_this_worker(env, lambda: None)
    assert again is not None and again.device == "9" and env["CUDA_VISIBLE_DEVICES"] == "9"
    assert pin_this_worker({"PV_DEVICES": "0"}, lambda: None) is None  # not an xdist worker
    untouched = {"PYTEST_XDIST_WORKER": "gw0"}
    assert pin_this_worker(untouched, lambda: None) is None and untouched == {"PYTEST_XDIST_WORKER": "gw0"}


def test_gpu_gate_and_device_label() -> None:
    gpu, cpu = Pinning("gw0", "3"), Pinning("gw1", None)
    assert gpu_gate(True, gpu) is None and gpu_gate(False, cpu) is None and gpu_gate(True, None) is None
    assert gpu_gate(True, cpu) == "no CUDA: worker gw1 is pinned to the CPU (no GPU to share out)"
    assert device_label(True, gpu) == "cuda:3"
    assert device_label(True, None) == "cuda"  # no xdist: whatever the process sees
    assert device_label(False, gpu) == "cpu"


# --- the plugin under pytest -n 2 -------------------------------------------------------------

FAKE_GPU = """
import os

import pv.requirements as requirements

# The machine probe answers as a one-GPU worker would; pinning itself is real.
if os.environ.get("PV_DEVICES"):
    requirements.current_machine = lambda: requirements.Machine(cuda=True, gpu_count=1, gpu_mem_gib=[80.0])
"""


def _device_contract(toy: ToyProject) -> None:
    probes = [
        falsifier(f"FALSIFY-DEV-{n:03d}", check="toyfalsifiers.devices:visible", expect='pinned != "<unset>"')
        for n in range(1, 7)
    ]
    gated = [
        falsifier(
            f"FALSIFY-DEV-{n:03d}",
            check="toyfalsifiers.devices:visible",
            expect='pinned != "<unset>"',
            requires=["cuda"],
        )
        for n in range(7, 11)
    ]
    toy.contract("dev", probes + gated)
    toy.write("fakegpu.py", FAKE_GPU)


def test_each_worker_sees_its_own_device_and_gpu_falsifiers_record_it(
    toy: ToyProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    _device_contract(toy)
    monkeypatch.setenv("PV_DEVICES", "3,7")
    result = toy.pytester.runpytest_subprocess(
        *LEAN, "-p", "fakegpu", "-p", "xdist", "-n", "2", "contracts", "--pv-no-evidence"
    )
    result.assert_outcomes(passed=10)
    expected = {"gw0": "3", "gw1": "7"}
    seen: dict[str, set[str]] = defaultdict(set)
    for r in toy.run_record()["results"]:
        worker = r["worker"]
        seen[worker].add(r["observations"]["visible"])
        assert r["observations"] == {"visible": expected[worker], "pinned": f"cuda:{expected[worker]}"}
        gated = r["falsify_id"] >= "FALSIFY-DEV-007"
        assert r["device"] == (f"cuda:{expected[worker]}" if gated else "cpu")
    assert dict(seen) == {"gw0": {"3"}, "gw1": {"7"}}


def test_without_gpus_workers_run_on_cpu_and_skip_gpu_falsifiers_with_a_reason(
    toy: ToyProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    _device_contract(toy)
    monkeypatch.setenv("PV_DEVICES", "")
    result = toy.pytester.runpytest_subprocess(
        *LEAN, "-p", "fakegpu", "-p", "xdist", "-n", "2", "contracts", "--pv-no-evidence"
    )
    result.assert_outcomes(passed=6, skipped=4)
    for r in toy.run_record()["results"]:
        if r["falsify_id"] >= "FALSIFY-DEV-007":
            assert r["verdict"] == "skipped"
            assert r["skip_reason"] == f"no CUDA: worker {r['worker']} is pinned to the CPU (no GPU to share out)"
        else:
            assert r["verdict"] == "survived" and r["device"] == "cpu"
            assert r["observations"] == {"visible": "", "pinned": "cpu"}
