"""Patch mutants: planted from the checker package, no hook in the system under test."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from pv.faults import ENV_VAR, resolve_mutant
from pv.patch_faults import PatchFaults, locate

SYSTEM = """\
EPS = 1e-6


def double(x):
    return 2 * x


class Norm:
    def scale(self, x):
        return x / (1 + EPS)
"""


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    (tmp_path / "patchsys_demo.py").write_text(SYSTEM)
    (tmp_path / "patchsys_user.py").write_text(
        "from patchsys_demo import double\n\n\ndef quadruple(x):\n    return 2 * double(x)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("patchsys_demo", "patchsys_user"):
        sys.modules.pop(name, None)
    return importlib.import_module("patchsys_demo")


def test_a_replacement_function_a_constant_and_a_method_are_on_only_inside_enabled(system: ModuleType) -> None:
    faults = PatchFaults("demo")

    @faults.replace("patchsys_demo:double", "doubles one too many")
    def double_off_by_one(x: int) -> int:
        return 2 * x + 1

    @faults.replace("patchsys_demo:Norm.scale", "the scale ignores its input")
    def scale_constant(self: object, x: float) -> float:
        return 1.0

    faults.set("eps_too_big", "patchsys_demo:EPS", 1e-2, "the epsilon is 10,000 times too big")
    assert faults.names() == ["double_off_by_one", "eps_too_big", "scale_constant"]
    assert system.double(3) == 6
    with faults.enabled("double_off_by_one"):
        assert system.double(3) == 7 and faults.active("double_off_by_one")
    assert system.double(3) == 6 and not faults.active("double_off_by_one")
    with faults.enabled("eps_too_big"):
        assert system.EPS == 1e-2
    assert system.EPS == 1e-6
    with faults.enabled("scale_constant"):
        assert system.Norm().scale(5.0) == 1.0
    assert system.Norm().scale(5.0) == pytest.approx(5.0)
    with pytest.raises(RuntimeError), faults.enabled("double_off_by_one"):
        raise RuntimeError("the checker crashed")
    assert system.double(3) == 6  # undone however the block ends


def test_a_copied_reference_needs_also(system: ModuleType) -> None:
    user = importlib.import_module("patchsys_user")
    faults = PatchFaults("demo")
    faults.set("double_zero", "patchsys_demo:double", lambda x: 0, "doubles to zero")
    faults.set("double_zero_everywhere", "patchsys_demo:double", lambda x: 0, "...", also=["patchsys_user:double"])
    with faults.enabled("double_zero"):
        assert user.quadruple(3) == 12  # mock.patch semantics: patch where the name is looked up
    with faults.enabled("double_zero_everywhere"):
        assert user.quadruple(3) == 0


def test_a_target_that_does_not_exist_is_a_broken_reference(
    system: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "patchsys_checks.py").write_text(
        textwrap.dedent(
            """\
            from pv import PatchFaults

            FAULTS = PatchFaults("demo")
            FAULTS.set("renamed", "patchsys_demo:tripple", None, "the function was renamed since")
            FAULTS.set("no_module", "patchsys_gone:double", None, "the module was removed")
            FAULTS.register("hooked", "a classic hook-style fault in the same registry")
            """
        )
    )
    sys.modules.pop("patchsys_checks", None)
    with pytest.raises(LookupError, match="has no attribute 'tripple'"):
        resolve_mutant("patchsys_checks:renamed", ["patchsys_checks"])
    with pytest.raises(LookupError, match="'patchsys_gone' failed to import"):
        resolve_mutant("patchsys_checks:no_module", ["patchsys_checks"])
    registry, name = resolve_mutant("patchsys_checks:hooked", ["patchsys_checks"])
    with registry.enabled(name):
        assert registry.active("hooked")
    with pytest.raises(LookupError, match="not of the form"):
        locate("patchsys_demo.double")


def test_a_child_process_started_under_the_mutant_runs_patched(system: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "patchsys_checks2.py").write_text(
        'from pv import PatchFaults\nFAULTS = PatchFaults("demo")\n'
        'FAULTS.set("double_zero", "patchsys_demo:double", lambda x: 0, "doubles to zero")\n'
    )
    code = "import patchsys_checks2, patchsys_demo; print(patchsys_demo.double(3))"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    mutated = subprocess.run(
        [sys.executable, "-c", code], env={**env, ENV_VAR: "double_zero"}, capture_output=True, text=True, check=True
    )
    assert (plain.stdout.strip(), mutated.stdout.strip()) == ("6", "0")
