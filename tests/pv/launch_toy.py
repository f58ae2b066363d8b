"""A toy project for the scale-out tests: the plugin's toy system plus checkers that run under torchrun."""

from __future__ import annotations

import pytest

from tests.pv.toy import ToyProject, build_toy

LAUNCHED = """
import os
import time

import pytest
import torch
import torch.distributed as dist

from pv.checkers import checker
from toysystem import system_value


@checker(observes=["world", "rank_sum", "value", "backend"])
def gather(pv_artifacts, scale=1.0):
    rank = dist.get_rank()
    t = torch.tensor([float(rank), system_value() * scale])
    dist.all_reduce(t)
    print(f"hello from rank {rank}")
    (pv_artifacts / "note.txt").write_text(f"rank {rank}\\n")
    return {"world": dist.get_world_size(), "rank_sum": t[0].item(), "value": t[1].item() / dist.get_world_size(),
            "backend": dist.get_backend()}


@checker(observes=["value"])
def rank1_crashes():
    if dist.get_rank() == 1:
        raise RuntimeError("rank 1 lost its shard")
    dist.barrier()
    return {"value": 1.0}


@checker(observes=["value"])
def sleeps(pv_artifacts, seconds):
    (pv_artifacts / f"pid-{os.getpid()}").write_text("")
    time.sleep(seconds)
    return {"value": 1.0}


@checker(observes=["value", "spread"])
def half_observed():
    return {"value": 1.0}


@checker(observes=["value"])
def skips_itself():
    pytest.skip("the toy interconnect is down")


@checker(observes=["value"])
def wants_fixture(toy_value):
    return {"value": toy_value}
"""

DEVICE_PROBE = """
import os

from pv.checkers import checker


@checker(observes=["visible", "pinned"])
def visible():
    return {"visible": os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"),
            "pinned": os.environ.get("PV_PINNED_DEVICE", "<unset>")}
"""


@pytest.fixture
def launch_toy(pytester: pytest.Pytester) -> ToyProject:
    """The plugin tests' toy project with launched and device-probe checkers; evidence stays on."""
    return build_toy(pytester, checkers={"launched": LAUNCHED, "devices": DEVICE_PROBE})
