"""A lint with nothing changed replays the last full run's report; any change to what lint reads runs it in full."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pv.app import app
from pv.cli import COMMAND_MODULES
from pv.lint import replay as replay_module
from pv.lint.replay import REPLAY_FILE, LintArgs, parse, replay

from .conftest import FIXTURES

for _module in COMMAND_MODULES:  # the real command set: with one command Typer would collapse the group
    importlib.import_module(_module)

MARK = "[replayed: nothing lint reads has changed since"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The good fixture tree with its own copy of the checker package, as the working folder."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "good", root)
    shutil.copytree(FIXTURES / "lintfx", root / "lintfx", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(FIXTURES)])
    for name in [m for m in sys.modules if m == "lintfx" or m.startswith("lintfx.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.chdir(root)
    monkeypatch.setattr(replay_module, "RACY_S", 0.0)  # the files were written a moment ago; see the racy test
    for name in [k for k in os.environ if k.startswith("PV_")]:
        monkeypatch.delenv(name)
    yield root


def full(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["lint", *args])
    return result.exit_code, result.output


def replayed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int | None, str]:
    code = replay(list(args))
    return code, capsys.readouterr().out


def settle(*args: str) -> str:
    """Two full runs: the first sets the ratchet and the cache, the second is the steady one that is stored."""
    full(*args)
    code, out = full(*args)
    assert code == 0, out
    return out


# --- the command line ----------------------------------------------------------------------------


def test_the_options_that_shape_a_report_are_parsed_as_the_command_parses_them() -> None:
    assert parse([]) == LintArgs()
    got = parse(["contracts/", "-f", "json", "--strict", "--checker-package=a", "--checker-package", "b", "--pr"])
    assert got == LintArgs(contracts="contracts", format="json", strict=True, checker_package=("a", "b"), pr=True)
    assert parse(["--evidence", "ev/", "--base=origin/main", "--strict-test-binding"]) == LintArgs(
        evidence="ev", base="origin/main", strict_test_binding=True
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--output", "r.txt"],
        ["--baseline", "b.json"],
        ["--write-baseline"],
        ["--no-state"],
        ["--explain", "PV102"],
        ["--help"],
        ["a", "b"],
        ["--format"],
        ["--strict=yes"],
        ["-x"],
    ],
)
def test_what_writes_a_file_skips_the_state_or_is_not_understood_runs_in_full(argv: list[str]) -> None:
    assert parse(argv) is None


# --- storing and replaying -----------------------------------------------------------------------


def test_the_steady_run_is_replayed_with_its_exit_code_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_code, _ = full()
    assert first_code == 0 and not (project / ".pv" / REPLAY_FILE).exists()  # the first run sets the ratchet
    assert replayed(capsys) == (None, "")
    out = settle()
    assert (project / ".pv" / REPLAY_FILE).is_file()
    code, text = replayed(capsys)
    assert code == 0
    head, _, rest = text.partition("\n")
    assert MARK in head and head.startswith(out.partition("\n")[0])
    assert rest == out.partition("\n")[2]


def test_a_machine_format_is_replayed_byte_for_byte(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = settle("--format", "json")
    assert replayed(capsys, "-f", "json") == (0, out)
    json.loads(out)
    assert replayed(capsys) == (None, "")  # another format is another report


def test_a_failing_lint_replays_its_failure(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alpha = project / "contracts" / "alpha.yaml"
    alpha.write_text(alpha.read_text().replace('expect: "grad_norm > 0"', 'expect: "grad_norm >"'))
    full()
    code, out = full()
    assert code == 1, out
    replay_code, text = replayed(capsys)
    assert replay_code == 1 and text.partition("\n")[2] == out.partition("\n")[2]


def _same_size_edit(path: Path) -> None:
    data = path.read_bytes()
    i = data.index(b"alpha") if b"alpha" in data else len(data) // 2
    path.write_bytes(data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :])


@pytest.mark.parametrize(
    "change",
    [
        "contract bytes, same size",
        "a new file in the checker package",
        "evidence appears",
        "a PV_ setting in the environment",
        "pyproject",
        "another option",
        "the import path",
    ],
)
def test_any_change_to_what_lint_reads_runs_it_in_full(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    settle()
    assert replayed(capsys)[0] == 0
    argv: list[str] = []
    if change == "contract bytes, same size":
        _same_size_edit(project / "contracts" / "alpha.yaml")
    elif change == "a new file in the checker package":
        (project / "lintfx" / "more.py").write_text("X = 1\n")
    elif change == "evidence appears":
        (project / "evidence" / "alpha-v1").mkdir(parents=True)
        (project / "evidence" / "alpha-v1" / "ledger.jsonl").write_text("")
    elif change == "a PV_ setting in the environment":
        monkeypatch.setenv("PV_REQUIRE_SIGNED", "0")
    elif change == "pyproject":
        with (project / "pyproject.toml").open("a") as fh:
            fh.write("# a comment\n")
    elif change == "another option":
        argv = ["--strict"]
    elif change == "the import path":
        monkeypatch.syspath_prepend(str(project.parent))
    assert replayed(capsys, *argv) == (None, "")


def test_a_run_with_new_findings_or_a_moved_ratchet_is_not_stored(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settle()
    alpha = project / "contracts" / "alpha.yaml"
    alpha.write_text(alpha.read_text().replace("check: lintfx:measure_grad", "check: lintfx:no_such_checker"))
    code, out = full()  # a new finding: the ratchet moves, the stored report is dropped
    assert "1 new" in out
    assert not (project / ".pv" / REPLAY_FILE).exists()
    assert replayed(capsys) == (None, "")
    code, out = full()  # the same finding again, and every contract from the cache: steady, stored
    assert "0 new" in out
    assert replayed(capsys)[0] == code


def test_options_that_write_or_skip_state_neither_store_nor_replay(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full("--no-state")
    full("--no-state")
    full("--output", "report.txt")
    full("--output", "report.txt")
    assert not (project / ".pv" / REPLAY_FILE).exists()


def test_a_file_changed_within_the_last_moment_is_never_stored(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_module, "RACY_S", 3600.0)  # every file of the tree is "just written"
    settle()
    assert not (project / ".pv" / REPLAY_FILE).exists()
    assert replayed(capsys) == (None, "")


def test_a_stored_report_from_another_format_version_or_spoiled_is_not_replayed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settle()
    stored = project / ".pv" / REPLAY_FILE
    doc = json.loads(stored.read_text())
    for spoiled in ({**doc, "format": 0}, {**doc, "exit_code": "0"}, {**doc, "text": None}, {**doc, "key": "0" * 64}):
        stored.write_text(json.dumps(spoiled))
        assert replayed(capsys) == (None, "")
    stored.write_text("{not json")
    assert replayed(capsys) == (None, "")


def test_git_moving_its_head_runs_lint_in_full(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git = ["git", "-c", "user.name=pv", "-c", "user.email=pv@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text(".pv/\n__pycache__/\n")
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=project, check=True)
    settle()
    assert replayed(capsys)[0] == 0
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "two"], cwd=project, check=True)
    assert replayed(capsys) == (None, "")
    settle()
    assert replayed(capsys)[0] == 0
    (project / "notes.txt").write_text("untracked, not ignored: git lists it\n")
    assert replayed(capsys) == (None, "")


def test_the_console_entry_point_replays_before_typer_pydantic_or_yaml_load(project: Path) -> None:
    settle()
    probe = (
        "import sys\nfrom pv.cli import main\nsys.argv = ['pv', 'lint']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n"
        "    print('|', exc.code, [m for m in ('typer', 'pydantic', 'yaml') if m in sys.modules])\n"
    )
    time.sleep(replay_module.RACY_S_DEFAULT)  # the subprocess keeps the racy rule: let the tree age past it
    # pv as installed; the subprocess's import path differs from this test's, so its first run is a
    # full one that stores its report, and the next replays it
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, check=True
        ).stdout
    assert MARK in out
    assert out.rstrip().endswith("| 0 []")


def test_caches_a_repository_does_not_ignore_are_not_inputs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git = ["git", "-c", "user.name=pv", "-c", "user.email=pv@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text(".pv/\n")  # __pycache__ not ignored
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=project, check=True)
    settle()
    (project / "lintfx" / "__pycache__").mkdir(exist_ok=True)
    (project / "lintfx" / "__pycache__" / "checks.cpython-311.pyc").write_bytes(b"\0")
    (project / ".mypy_cache").mkdir()
    (project / ".mypy_cache" / "cache.json").write_text("{}")
    assert replayed(capsys)[0] == 0
