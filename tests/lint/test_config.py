"""pv.config: command line over [tool.pv] over defaults; the root is importable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pv.config import DEFAULT_CHECKER_PACKAGES, ConfigError, ensure_importable, find_pyproject, load_config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_a_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if find_pyproject(tmp_path) is not None:
        pytest.skip("a pyproject.toml above the temporary directory")
    cfg = load_config()
    assert cfg.root == tmp_path.resolve() and cfg.pyproject is None
    assert cfg.contracts == tmp_path.resolve() / "contracts"
    assert cfg.evidence == tmp_path.resolve() / "evidence"
    assert cfg.checker_packages == DEFAULT_CHECKER_PACKAGES == ("falsifiers",)


def test_tool_pv_table_is_read_from_the_nearest_pyproject(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[tool.pv]\ncontracts = "specs"\nchecker_packages = ["a.b", "c"]\nevidence = "ev"\n',
    )
    nested = tmp_path / "specs" / "deep"
    nested.mkdir(parents=True)
    cfg = load_config(nested)
    assert cfg.root == tmp_path.resolve() and cfg.pyproject == tmp_path / "pyproject.toml"
    assert cfg.contracts == tmp_path.resolve() / "specs"
    assert cfg.evidence == tmp_path.resolve() / "ev"
    assert cfg.checker_packages == ("a.b", "c")
    assert cfg.state_dir == tmp_path.resolve() / ".pv"
    assert cfg.relpath(nested / "x.yaml") == "specs/deep/x.yaml"
    assert cfg.relpath(tmp_path) == "."


def test_command_line_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "pyproject.toml", '[tool.pv]\ncontracts = "specs"\nchecker_packages = "x, y"\n')
    monkeypatch.chdir(tmp_path)
    assert load_config().checker_packages == ("x", "y")
    cfg = load_config(contracts="other", checker_packages=["z"], evidence="e2")
    assert cfg.contracts == tmp_path.resolve() / "other"
    assert cfg.checker_packages == ("z",)
    assert cfg.evidence == tmp_path.resolve() / "e2"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('checker_package = ["x"]', "did you mean 'checker_packages'"),
        ("contracts = 3", "must be a path string"),
        ("checker_packages = [1]", "list of module names"),
    ],
)
def test_malformed_tables_are_errors(tmp_path: Path, table: str, message: str) -> None:
    write(tmp_path / "pyproject.toml", f"[tool.pv]\n{table}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_unparsable_pyproject_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.pv\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path)


def test_paths_outside_the_root_stay_absolute(tmp_path: Path) -> None:
    write(tmp_path / "repo" / "pyproject.toml", "")
    cfg = load_config(tmp_path / "repo")
    assert cfg.relpath(tmp_path / "elsewhere.yaml") == (tmp_path / "elsewhere.yaml").resolve().as_posix()


def test_a_symlinked_path_into_the_root_is_relative(tmp_path: Path) -> None:
    write(tmp_path / "repo" / "pyproject.toml", "")
    write(tmp_path / "repo" / "contracts" / "a.yaml", "")
    (tmp_path / "link").symlink_to(tmp_path / "repo" / "contracts")
    cfg = load_config(tmp_path / "repo")
    assert cfg.relpath(tmp_path / "link" / "a.yaml") == "contracts/a.yaml"


def test_ensure_importable_puts_the_root_first_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", ["/nowhere"])
    write(tmp_path / "mycheckers_cfgtest" / "__init__.py", "VALUE = 7\n")
    ensure_importable(tmp_path)
    ensure_importable(tmp_path)
    assert sys.path == [str(tmp_path.resolve()), "/nowhere"]
    monkeypatch.delitem(sys.modules, "mycheckers_cfgtest", raising=False)
    import mycheckers_cfgtest  # type: ignore[import-not-found]

    assert mycheckers_cfgtest.VALUE == 7
    monkeypatch.delitem(sys.modules, "mycheckers_cfgtest")
