"""Fuzzing: mutated contracts (deleted keys, swapped types, random bytes) never make validate raise."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pv.diagnostics import Diagnostic
from pv.validate import validate_paths

from .test_validate import make

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "validate" / "rust"
SEEDS: list[str] = [make(), make("beta-v1", "BETA")] + [p.read_text() for p in sorted(FIXTURES.glob("*.yaml"))]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["FALSIFY-X-001", "x <", "0 < x <= 1", "1.0.0", "os:system", "a:b", "", "   "]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _mutate(data: Any, path: tuple[Any, ...], op: str, value: Any) -> Any:
    if not path:
        return value
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "rename" and isinstance(last, str):
        parent[last[:-1] + "x"] = parent.pop(last)
    else:
        parent[last] = value
    return data


@st.composite
def mutated_yaml(draw: st.DrawFn) -> str:
    data = yaml.safe_load(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["delete", "swap", "rename"]))
        data = _mutate(copy.deepcopy(data), path, op, draw(_values))
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@st.composite
def corrupted_bytes(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(st.sampled_from(SEEDS)).encode())
    for _ in range(draw(st.integers(1, 8))):
        pos = draw(st.integers(0, len(raw)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        chunk = draw(
            st.binary(min_size=1, max_size=6) | st.sampled_from([b":", b"- ", b"\n", b"&a", b"*a", b"!!", b"{", b"["])
        )
        if action == "insert":
            raw[pos:pos] = chunk
        elif action == "delete":
            del raw[pos : pos + len(chunk)]
        elif action == "replace":
            raw[pos : pos + len(chunk)] = chunk
        else:
            del raw[pos:]
    return bytes(raw)


def _check(report_diagnostics: list[Diagnostic]) -> None:
    for d in report_diagnostics:
        assert d.code.startswith("PV")
        assert d.line >= 0 and d.col >= 0
        json.dumps(d.to_dict())


_settings = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@_settings
@given(text=mutated_yaml())
def test_mutated_contracts_never_raise(tmp_path: Path, text: str) -> None:
    path = tmp_path / "alpha-v1.yaml"
    path.write_text(text, encoding="utf-8")
    report = validate_paths([path], checker_packages=["falsifiers"], fault_packages=["engine"])
    _check(report.diagnostics)
    assert report.exit_code in (0, 1)
    json.dumps(report.to_json())


@_settings
@given(raw=corrupted_bytes())
def test_corrupted_bytes_never_raise(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "alpha-v1.yaml"
    path.write_bytes(raw)
    report = validate_paths([path, FIXTURES], checker_packages=["falsifiers"], fault_packages=["engine"])
    _check(report.diagnostics)
    assert report.n_contracts == 1 + len(list(FIXTURES.glob("*.yaml")))
    # the fixtures are still checked: nothing about them is reported unless the fuzzed file collides
    fixture_errors = [d for d in report.diagnostics if Path(d.path).parent == FIXTURES and d.code < "PV120"]
    assert fixture_errors == []
