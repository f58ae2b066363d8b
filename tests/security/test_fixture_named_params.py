"""A contract cannot replace a pytest fixture through its params: validate (what pre-commit runs),
lint and the run all refuse it, with one code (PV127)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.validate import KNOWN_FIXTURES, validate_paths

CONTRACT = """\
metadata:
  id: fix-v1
  version: 1.0.0
  description: d
  references: [r]
falsification_tests:
  - id: FALSIFY-FIX-001
    prediction: p
    check: falsifiers.demo:loss
    {section}
    expect: "x > 0"
"""


@pytest.mark.parametrize("name", ["tmp_path", "request", "monkeypatch", "pv_artifacts", "pytestconfig"])
@pytest.mark.parametrize("shape", ["params: {{{name}: 1}}", "parametrize: {{{name}: [1, 2]}}"])
def test_validate_reports_a_param_named_like_a_fixture(tmp_path: Path, name: str, shape: str) -> None:
    path = tmp_path / "fix-v1.yaml"
    path.write_text(CONTRACT.format(section=shape.format(name=name)), encoding="utf-8")
    diagnostics = [d for d in validate_paths([path]).diagnostics if d.code == "PV127"]
    assert len(diagnostics) == 1, diagnostics
    d = diagnostics[0]
    assert name in d.message and d.line == 10 and d.hint


def test_an_ordinary_param_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "fix-v1.yaml"
    path.write_text(CONTRACT.format(section="params: {path_len: 1}"), encoding="utf-8")
    assert not [d for d in validate_paths([path]).diagnostics if d.code == "PV127"]


def test_known_fixtures_include_pytests_own() -> None:
    import _pytest.fixtures  # noqa: F401  (the builtins are registered by these plugins)

    assert {"tmp_path", "request", "monkeypatch", "capsys", "pv_artifacts"} <= KNOWN_FIXTURES
