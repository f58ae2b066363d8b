"""A toy project for the plugin's tests: checkers and a fault registry that need no torch.

``toysystem`` is the system under test (one number, and a fault that changes it);
``toyfalsifiers`` holds the checkers.  Every test writes its own contracts with
:meth:`ToyProject.contract`.
"""

from __future__ import annotations

import contextlib
import json
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

# The harness seeds numpy and torch before every checker.  pytester's in-process runs restore
# sys.modules afterwards, and C extensions cannot be imported twice in one process, so they are
# imported here, before any inner run, and stay loaded.
for _module in ("numpy", "torch"):
    with contextlib.suppress(ImportError):
        __import__(_module)

TOYSYSTEM = """
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("toy")
FAULTS.register("off_by_one", "the system's value is one too high")
FAULTS.register("unused", "a fault no code path looks at")


def system_value() -> float:
    return 2.0 if FAULTS.active("off_by_one") else 1.0
"""

TOYCHECKERS = """
import os
import random
import time

import pytest

from pv.checkers import checker
from toysystem import FAULTS, system_value


@checker(observes=["value"])
def measure(offset=0.0):
    return {"value": system_value() + offset}


@checker(observes=["value"])
def blind():
    # Never looks at the system: survives any mutant.
    return {"value": 1.0}


@checker(observes=["value"])
def crash():
    raise RuntimeError("checker blew up")


@checker(observes=["value"])
def hang(seconds):
    time.sleep(seconds)
    return {"value": 1.0}


@checker(observes=["value", "spread"])
def half_observed():
    return {"value": 1.0}


@checker(observes=["value"])
def unserialisable():
    return {"value": object()}


@checker(observes=["value"])
def not_a_dict():
    return [1.0]


@checker(observes=["seen", "env"])
def fault_probe():
    return {"seen": FAULTS.active("off_by_one"), "env": os.environ.get("PV_FAULTS", "")}


@checker(observes=["draw"])
def random_draw():
    return {"draw": random.random()}


@checker(observes=["n"])
def writes_artifact(pv_artifacts, n):
    (pv_artifacts / "table.csv").write_text("n\\n" + str(n) + "\\n")
    return {"n": n}


@checker(observes=["value"])
def uses_fixture(toy_value):
    return {"value": toy_value}


@checker(observes=["value"])
def skips_itself():
    pytest.skip("the toy backend is not available")


@checker(observes=["counterexamples"])
def below_bound(pv_hypothesis, bound):
    from hypothesis import strategies as st

    def prop(x):
        assert x < bound

    return pv_hypothesis.run(prop, x=st.integers(min_value=0, max_value=1000))


@checker(observes=["counterexamples"])
def small_ints_ok(pv_hypothesis, forbidden):
    from hypothesis import strategies as st

    def prop(x):
        assert x != forbidden

    return pv_hypothesis.run(prop, x=st.integers(min_value=0, max_value=10))


def not_registered():
    return {"value": 1.0}
"""

RECORDER = """
import json
import os


def pytest_pv_run_finished(config, run):
    out = {
        "run_id": run.run_id,
        "mutants_enabled": run.mutants_enabled,
        "interrupted": run.interrupted,
        "selection": run.selection,
        "contracts": {k: {"sha256": c.sha256, "declared": c.declared, "path": c.path}
                      for k, c in run.contracts.items()},
        "results": [r.to_json() for r in run.results],
    }
    with open(os.path.join(str(config.rootpath), "run.json"), "w") as fh:
        json.dump(out, fh, sort_keys=True)
"""

CONFTEST = """
import pytest

pytest_plugins = ["recorder"]


@pytest.fixture
def toy_value():
    return 41.0
"""


def falsifier(fid: str, **fields: Any) -> dict[str, Any]:
    """A falsification_tests entry with the required fields filled in."""
    entry: dict[str, Any] = {"id": fid, "rule": f"rule of {fid}", "prediction": f"prediction of {fid}"}
    entry.update(fields)
    return entry


@dataclass
class ToyProject:
    pytester: pytest.Pytester

    @property
    def root(self) -> Path:
        return self.pytester.path

    def contract(self, cid: str, falsifiers: list[dict[str, Any]], folder: str = "contracts", **meta: Any) -> Path:
        data = {
            "metadata": {
                "id": cid,
                "version": "1.0.0",
                "description": f"toy contract {cid}",
                "references": ["the toy system's documentation"],
                **meta,
            },
            "falsification_tests": falsifiers,
        }
        path = self.root / folder / f"{cid}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def write(self, relpath: str, text: str) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def run_record(self) -> dict[str, Any]:
        return json.loads((self.root / "run.json").read_text())

    def verdicts(self) -> dict[str, str]:
        return {f"{r['contract_id']}::{r['falsify_id']}": r["verdict"] for r in self.run_record()["results"]}


def build_toy(pytester: pytest.Pytester, *, addopts: str = "", checkers: Mapping[str, str] | None = None) -> ToyProject:
    """The toy project: its system, recorder, conftest and checker package (plus ``checkers`` modules)."""
    pytester.makepyprojecttoml(
        f"""
        [tool.pytest.ini_options]
        pv_contracts = "contracts"
        pv_checker_packages = "toyfalsifiers"
        pv_fault_packages = "toysystem"
        pythonpath = "."
        addopts = "{addopts}"
        """
    )
    pytester.makepyfile(toysystem=TOYSYSTEM, recorder=RECORDER, conftest=CONFTEST)
    pkg = pytester.mkpydir("toyfalsifiers")
    (pkg / "basic.py").write_text(TOYCHECKERS)
    for module, text in (checkers or {}).items():
        (pkg / f"{module}.py").write_text(text)
    pytester.syspathinsert()
    return ToyProject(pytester)


@pytest.fixture
def toy(pytester: pytest.Pytester) -> ToyProject:
    return build_toy(pytester, addopts="--pv-no-evidence")
