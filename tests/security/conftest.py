"""A hostile-contract project: sentinel modules that leave a flag file if anything imports them."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

for _module in ("numpy", "torch"):  # pytester's in-process runs: C extensions load once
    with contextlib.suppress(ImportError):
        __import__(_module)

SENTINEL = """
from pathlib import Path
Path(__file__).with_name("IMPORTED-" + __name__.replace(".", "_")).write_text("imported")
"""

CHECKS = """
from pv.checkers import checker


@checker(observes=["value"])
def measure(n=0):
    return {"value": 1.0}


@checker(observes=["value"])
def takes_path(tmp_path):
    return {"value": 1.0 if str(tmp_path) != "/etc" else 2.0}
"""

SYSTEM = """
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("sec")
FAULTS.register("off", "the measure is off")
"""


@dataclass
class Hostile:
    root: Path
    pytester: pytest.Pytester

    def contract(self, name: str, entries: list[dict[str, object]], **meta: object) -> Path:
        data = {
            "metadata": {
                "id": name,
                "version": "1.0.0",
                "status": "DRAFT",
                "description": "hostile",
                "changelog": [{"version": "1.0.0", "date": "2026-01-01", "change": "initial"}],
                **meta,
            },
            "falsification_tests": [
                {"rule": "r", "prediction": "p", "expect": "value == 1.0", "check": "secchecks.checks:measure", **e}
                for e in entries
            ],
        }
        path = self.root / "contracts" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def imported(self) -> list[str]:
        return sorted(p.name for p in self.root.rglob("IMPORTED-*"))


@pytest.fixture
def hostile(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hostile]:
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        pv_contracts = "contracts"
        pv_checker_packages = "secchecks"
        pv_fault_packages = "secsystem"
        pythonpath = "."
        addopts = "-p no:cacheprovider"

        [tool.pv]
        checker_packages = ["secchecks"]
        fault_packages = ["secsystem"]
        """
    )
    pkg = pytester.mkpydir("secchecks")
    (pkg / "checks.py").write_text(CHECKS)
    pytester.makepyfile(secsystem=SYSTEM, evilmod=SENTINEL)
    evil = pytester.mkpydir("evilpkg")
    (evil / "__init__.py").write_text(SENTINEL)
    (evil / "sub.py").write_text(SENTINEL)
    pytester.syspathinsert()
    monkeypatch.chdir(pytester.path)
    yield Hostile(pytester.path, pytester)
    for name in ("evilmod", "evilpkg", "evilpkg.sub"):
        sys.modules.pop(name, None)
