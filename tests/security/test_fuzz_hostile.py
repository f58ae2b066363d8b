"""Hypothesis: hostile contracts through validate, lint and pytest collection.

Each example is a contract built from the fragments the audit used (imports outside the trusted
packages, dotted package requirements, huge numbers, alias bombs, deep nesting, fixture-named
params, oversized launches, hidden file names).  Whatever the mix: no command crashes, pytest has
no INTERNALERROR, and no sentinel module is ever imported.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pv.config import load_config
from pv.lint import LintOptions, lint
from pv.validate import validate_paths
from tests.security.conftest import Hostile

REFS = st.sampled_from(
    ["evilmod:x", "evilpkg.sub:x", "evilpkg:FAULTS", "secsystem:off", "secchecks.checks:measure", "os:system", "x"]
)
REQUIRES = st.sampled_from(["cpu", "package:evilpkg.sub", "package:evilpkg", "package:os.path", "cuda", "gpus>=999"])
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["0x" + "f" * 400, "0o" + "7" * 400, "1e999", ".nan", "-.inf", "9" * 5000]),
)
PARAM_NAMES = st.sampled_from(["n", "tmp_path", "request", "pv_artifacts", "seed", "monkeypatch"])


@st.composite
def falsifier(draw: st.DrawFn, n: int) -> dict[str, object]:
    entry: dict[str, object] = {
        "id": f"FALSIFY-FZ-{n:03d}",
        "rule": "r",
        "prediction": "p",
        "check": draw(REFS),
        "expect": draw(st.sampled_from(["value == 1.0", "__import__('os')", "value.__class__", "open('x')"])),
        "ship_blocking": draw(st.booleans()),
    }
    if draw(st.booleans()):
        entry["mutant"] = draw(REFS)
    if draw(st.booleans()):
        entry["requires"] = draw(st.lists(REQUIRES, max_size=2))
    if draw(st.booleans()):
        entry["params"] = {draw(PARAM_NAMES): draw(NUMBERS)}
    if draw(st.booleans()):
        entry["launch"] = {"nproc": draw(st.sampled_from([1, 2, 9, 1024, 10**6]))}
    if draw(st.booleans()):
        entry["timeout_s"] = draw(NUMBERS)
    return entry


@st.composite
def hostile_text(draw: st.DrawFn) -> tuple[str, str]:
    n = draw(st.integers(min_value=1, max_value=3))
    data = {
        "metadata": {
            "id": draw(st.sampled_from(["fz-v1", "..", "../out", "fz v1"])),
            "version": "1.0.0",
            "status": draw(st.sampled_from(["DRAFT", "ACTIVE"])),
            "description": "fuzz",
        },
        "falsification_tests": [draw(falsifier(i + 1)) for i in range(n)],
    }
    text = yaml.safe_dump(data, sort_keys=False)
    for number in ("0x" + "f" * 400, "0o" + "7" * 400, "9" * 5000):
        text = text.replace(f"'{number}'", number)  # unquoted: a number to YAML, not a string
    tail = draw(
        st.sampled_from(
            [
                "",
                "bomb: &a [x, x, x, x, x, x, x, x]\n"
                + "".join(f"b{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 8)}]\n" for i in range(7)),
                "deep: " + "[" * 500 + "]" * 500 + "\n",
                "tagged: !!python/object/apply:os.system ['true']\n",
            ]
        )
    )
    name = draw(st.sampled_from(["fz-v1.yaml", ".fz-v1.yaml", "...yaml", "fz-v1.yml"]))
    return name, text + tail


counter = itertools.count()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=hostile_text())
def test_hostile_contracts_never_crash_a_command_or_import_code(hostile: Hostile, example: tuple[str, str]) -> None:
    name, text = example
    contracts = hostile.root / "contracts"
    for old in contracts.glob("*") if contracts.exists() else []:
        old.unlink()
    contracts.mkdir(exist_ok=True)
    (contracts / name).write_text(text)
    validate_paths([contracts])  # raises on a crash
    lint(load_config(hostile.root), LintOptions(use_state=False))
    result = hostile.pytester.runpytest("--collect-only", "-q", "contracts", "--pv-mutants")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert result.ret in (0, 1, 2, 5), out[-3000:]
    assert hostile.imported() == [], (name, text[:500])
    assert not (hostile.root / "out").exists()


@pytest.mark.parametrize("name", [".fz-v1.yaml", "...yaml"])
def test_hidden_names_collect_nothing(hostile: Hostile, name: str) -> None:
    (hostile.root / "contracts").mkdir()
    (hostile.root / "contracts" / name).write_text("metadata: {id: fz-v1}\n")
    result = hostile.pytester.runpytest("--collect-only", "-q", "contracts")
    assert result.ret == 5  # nothing collected, exactly as validate finds nothing
    assert Path(hostile.root / "contracts" / name).exists()
