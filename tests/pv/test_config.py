"""pv.config: command line, environment, pytest ini, [tool.pv], default, in that order; the root is importable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pv.config import (
    DEFAULT_CHECKER_PACKAGES,
    SETTINGS,
    ConfigError,
    ensure_importable,
    find_pyproject,
    load_config,
    resolve,
)


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


def _layered(root: Path) -> None:
    write(root / "pyproject.toml", '[tool.pv]\nmax_nproc = 2\ntimeout_s = 5\nisolation = "thread"\ndialect = "rust"\n')
    write(root / "pytest.ini", "[pytest]\npv_max_nproc = 3\npv_timeout_s = 6\npv_isolation = process\n")


def test_one_order_command_line_environment_ini_table_default(tmp_path: Path) -> None:
    _layered(tmp_path)
    cfg = resolve(tmp_path, cli={"max_nproc": 4}, env={"PV_MAX_NPROC": "9", "PV_TIMEOUT_S": "7"})
    assert cfg.max_nproc == 4  # command line over everything
    assert cfg.timeout_s == 7.0  # environment over the ini file
    assert cfg.isolation == "process"  # pytest's ini over [tool.pv]
    assert cfg.dialect == "rust"  # [tool.pv] over the default
    assert cfg.vram_wait_s == 0.0 and cfg.mutation_log is None  # defaults
    assert cfg.origins["max_nproc"] == "command line" and cfg.origins["timeout_s"] == "environment"
    assert cfg.origins["isolation"] == "pytest.ini" and cfg.origins["vram_wait_s"] == "default"
    # every setting has an ini name and an environment name the order applies to
    assert {s.ini for s in SETTINGS} >= {"pv_contracts", "pv_checker_packages", "pv_evidence", "pv_timeout_s"}


def test_relative_paths_start_where_they_are_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "pyproject.toml", '[tool.pv]\nevidence = "ev"\n')
    write(tmp_path / "sub" / "pytest.ini", "[pytest]\npv_contracts = specs\n")
    monkeypatch.chdir(tmp_path / "sub")
    cfg = resolve(tmp_path / "sub", env={"PV_MUTATION_LOG": "log.jsonl"})
    assert cfg.evidence == tmp_path.resolve() / "ev"  # [tool.pv]: the pyproject's folder
    assert cfg.contracts == tmp_path.resolve() / "sub" / "specs"  # ini: the ini file's folder
    assert cfg.mutation_log == tmp_path.resolve() / "sub" / "log.jsonl"  # environment: the current folder


def test_an_enclosing_projects_ini_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / "pytest.ini", "[pytest]\npv_checker_packages = outer\n")
    write(tmp_path / "inner" / "pyproject.toml", '[tool.pv]\nchecker_packages = ["inner"]\n')
    assert resolve(tmp_path / "inner", env={}).checker_packages == ("inner",)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"env": {"PV_MAX_NPROC": "many"}}, "environment: PV_MAX_NPROC must be a whole number"),
        ({"env": {"PV_ISOLATION": "vm"}}, "environment: PV_ISOLATION must be one of auto, thread, process"),
        ({"cli": {"vram_wait_s": -1.0}}, "command line: --vram-wait-s must be 0 or more"),
        ({"ini": {"pv_write_evidence": "perhaps"}}, "pv_write_evidence must be true or false"),
        ({"ini": {"pv_max_nproc": "5000"}}, "pv_max_nproc must be from 1 to 4096"),
    ],
)
def test_a_bad_value_names_where_it_was_set(tmp_path: Path, source: dict[str, object], message: str) -> None:
    write(tmp_path / "pyproject.toml", "")
    with pytest.raises(ConfigError, match=message):
        resolve(tmp_path, env=source.get("env", {}), cli=source.get("cli"), ini=source.get("ini"))  # type: ignore[arg-type]


def test_lint_and_pytest_read_the_same_ini(pytester: pytest.Pytester) -> None:
    """The pv commands read pytest's ini themselves; the plugin gets it from pytest: one value."""
    pytester.makeini("[pytest]\npv_max_nproc = 3\npv_timeout_s = 12\n")
    pytester.makeconftest(
        "from pv.pytest_settings import settings_of\n"
        "def pytest_report_header(config):\n"
        "    s = settings_of(config)\n"
        "    return f'pv settings: nproc={s.max_nproc} timeout={s.timeout_s:g}'\n"
    )
    cfg = load_config(pytester.path)
    assert (cfg.max_nproc, cfg.timeout_s) == (3, 12.0)
    result = pytester.runpytest("--collect-only", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["pv settings: nproc=3 timeout=12"])
    result = pytester.runpytest("--collect-only", "-p", "no:randomly", "--pv-timeout", "4")
    result.stdout.fnmatch_lines(["pv settings: nproc=3 timeout=4"])
    bad = pytester.runpytest("--collect-only", "-o", "pv_isolation=vm")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*pv_isolation must be one of auto, thread, process*"])
