"""scripts/mutation/judge.py's workspace: pv's core mutated, everything else of pv left alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.scripts_loader import load_script

judge = load_script("scripts/mutation/judge.py")


def test_only_the_judging_core_is_mutated() -> None:
    config = tomllib.loads(judge.settings())["tool"]["mutmut"]
    left_alone = set(config["do_not_mutate"])
    assert config["source_paths"] == ["pv/"] and config["pytest_add_cli_args_test_selection"] == ["tests/pv"]
    assert "pv/plugin.py" in left_alone and "pv/loader.py" in left_alone
    for core in ("pv/expr.py", "pv/noise.py", "pv/promote.py", "pv/evidence/verify.py", "pv/review/compare.py"):
        assert core not in left_alone
    assert not [p for p in left_alone if p.startswith(judge.CORE)]


def test_the_workspace_links_the_repository_and_carries_its_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "pv").mkdir(parents=True)
    (repo / "pv" / "expr.py").write_text("")
    (repo / "pv" / "plugin.py").write_text("")
    (repo / "tests").mkdir()
    pyproject = '[project]\nname = "x"\n\n[tool.mutmut]\nsource_paths = ["engine/"]\n\n[tool.z]\na = 1\n'
    (repo / "pyproject.toml").write_text(pyproject)
    monkeypatch.setattr(judge, "ROOT", repo)
    monkeypatch.setattr(judge, "WORKSPACE", repo / "mutants-judge")
    judge.prepare()
    judge.prepare()  # a second chunk finds the workspace as the first left it
    space = repo / "mutants-judge"
    assert (space / "pv").resolve() == repo / "pv" and (space / "tests").is_symlink()
    assert not (space / "mutants-judge").exists()
    config = tomllib.loads((space / "pyproject.toml").read_text())
    assert config["project"]["name"] == "x" and config["tool"]["z"] == {"a": 1}
    assert config["tool"]["mutmut"]["source_paths"] == ["pv/"]
    assert config["tool"]["mutmut"]["do_not_mutate"] == ["pv/plugin.py"]
