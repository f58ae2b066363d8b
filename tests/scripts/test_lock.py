"""The locks in requirements/ cover every dependency pyproject.toml declares (scripts/lock.sh)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ["requirements/cpu.txt", "requirements/cuda.txt"]


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    rows = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        rows += extra
    return [Requirement(r) for r in rows]


def pins(lock: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / lock).read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;#]+)", line)
        if m:
            out[canonicalize_name(m[1])] = m[2]
    return out


@pytest.mark.parametrize("lock", LOCKS)
def test_every_declared_dependency_is_pinned_within_its_range(lock: str) -> None:
    pinned = pins(lock)
    missing = [str(r) for r in declared() if canonicalize_name(r.name) not in pinned]
    assert not missing, f"{lock} lacks {missing}: run bash scripts/lock.sh"
    outside = [
        f"{r} (locked {pinned[canonicalize_name(r.name)]})"
        for r in declared()
        if not r.specifier.contains(pinned[canonicalize_name(r.name)], prereleases=True)
    ]
    assert not outside, f"{lock} pins outside pyproject's ranges: {outside}: run bash scripts/lock.sh"


def test_the_locks_pin_the_same_torch_release_in_its_two_builds() -> None:
    want = Requirement((ROOT / "requirements/torch.in").read_text(encoding="utf-8").split("#")[0].strip())
    cpu, cuda = pins("requirements/cpu.txt")["torch"], pins("requirements/cuda.txt")["torch"]
    assert cpu.endswith("+cpu") and cpu.split("+")[0] == cuda
    assert want.specifier.contains(cuda)


def test_ci_and_the_readme_install_from_the_lock() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install -c requirements/cpu.txt -e ".[engine,test]" && pytest' in readme
    assert "-c requirements/cpu.txt" in (ROOT / ".ci/run").read_text(encoding="utf-8")
