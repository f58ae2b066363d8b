"""Reading many contracts over forked workers gives the sequential reading, file for file: clean
files, broken YAML, schema errors, a NaN, a Rust-dialect data file; a worker that fails or sends
garbage costs only time (its share is read again here); and workers are used only where a fork
is safe, as many as ``PV_READ_WORKERS`` says."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pv import forked_read
from pv.config import ConfigError
from pv.forked_read import MIN_FILES, WORKERS_ENV, read_files, workers
from pv.loader import LoadedContract, load_contract_file
from tests.pv.cli_trees import Invoke
from tests.pv.evidence.conftest import CONTRACT

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test session's own threads (a checker abandoned at its deadline sleeps on) would keep
    every fork off: these tests read as a one-thread process does (their workers take no lock)."""
    monkeypatch.setattr(forked_read.threading, "active_count", lambda: 1)


def _tree(root: Path) -> list[Path]:
    files = {
        **{f"c{i:02d}.yaml": CONTRACT.replace("id: demo-v1", f"id: c{i:02d}-v1") for i in range(9)},
        "broken.yaml": "metadata: [unclosed\n",
        "schema.yaml": "metadata:\n  id: schema-v1\n  version: not-semver\n",
        "nan.yaml": CONTRACT.replace("id: demo-v1", "id: nan-v1").replace("seed: 0}", "seed: 0, tol: .nan}"),
        "data.yaml": "entries: [1, 2, 3]\n",  # no metadata: a data file to the Rust dialect
    }
    paths = []
    for name, text in files.items():
        path = root / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return sorted(paths)


def _reading(loaded: LoadedContract) -> dict[str, Any]:
    return {
        "path": loaded.path,
        "sha256": loaded.sha256,
        "text": loaded.text,
        "data": repr(loaded.data),  # repr: a NaN equals itself in its text only
        "contract": loaded.contract.model_dump_json() if loaded.contract is not None else None,
        "diagnostics": list(loaded.diagnostics),
        "skipped": loaded.skipped,
        "located": loaded._located,
    }


@pytest.mark.parametrize("dialect", ["pv", "rust"])
@pytest.mark.parametrize("n", ["2", "3", "20"])
def test_workers_give_the_sequential_reading_file_for_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str, n: str
) -> None:
    paths = _tree(tmp_path)
    sequential = [_reading(load_contract_file(p, dialect=dialect)) for p in paths]
    monkeypatch.setenv(WORKERS_ENV, n)
    assert workers(len(paths)) == min(int(n), len(paths))
    assert [_reading(loaded) for loaded in read_files(paths, dialect)] == sequential
    assert any(r["contract"] for r in sequential) and any(r["diagnostics"] for r in sequential)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files this process reads itself (a worker counts in its own copy of the list)."""
    here: list[Path] = []
    real = forked_read.load_contract_file

    def counted(path: Path, **kwargs: Any) -> LoadedContract:
        here.append(path)
        return real(path, **kwargs)

    monkeypatch.setattr(forked_read, "load_contract_file", counted)
    return here


def test_a_worker_reads_its_share_and_only_what_it_could_not_send_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _tree(tmp_path)
    monkeypatch.setenv(WORKERS_ENV, "2")
    here = _counting(monkeypatch)
    read_files(paths)
    theirs = paths[1::2]
    # this process's share, and of the worker's share the files with something to report
    assert sorted(here) == sorted([*paths[0::2], *(p for p in theirs if p.name in {"broken.yaml", "schema.yaml"})])


@pytest.mark.parametrize("failure", ["raises", "sends-garbage", "dies"])
def test_a_failed_worker_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    paths = _tree(tmp_path)
    sequential = [_reading(load_contract_file(p)) for p in paths]
    monkeypatch.setenv(WORKERS_ENV, "2")
    if failure == "raises":

        def broken(loaded: LoadedContract) -> LoadedContract:
            raise RuntimeError("a worker's bug")

        monkeypatch.setattr(forked_read, "_portable", broken)
    elif failure == "sends-garbage":
        monkeypatch.setattr(forked_read.pickle, "dumps", lambda obj, protocol=None: b"not a pickle")
    else:
        monkeypatch.setattr(forked_read, "_portable", lambda loaded: os.kill(os.getpid(), 9))
    here = _counting(monkeypatch)
    assert [_reading(loaded) for loaded in read_files(paths)] == sequential
    assert sorted(here) == paths  # the worker's share too


def test_workers_are_used_for_many_files_where_a_fork_is_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(forked_read.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(forked_read.sys, "platform", "linux")
    assert workers(MIN_FILES - 1) == 1
    assert workers(MIN_FILES) == 2  # a worker per half of MIN_FILES files, up to the CPUs
    assert workers(10_000) == 4
    monkeypatch.setattr(forked_read.sys, "platform", "darwin")
    assert workers(10_000) == 1
    monkeypatch.setattr(forked_read.sys, "platform", "linux")
    monkeypatch.setattr(forked_read.threading, "active_count", lambda: 2)
    assert workers(10_000) == 1  # another thread could hold a lock the fork would copy held


@pytest.mark.parametrize(("setting", "n"), [("1", 1), ("3", 3), (" 2 ", 2), ("64", 5)])
def test_the_setting_says_how_many_processes_read(monkeypatch: pytest.MonkeyPatch, setting: str, n: int) -> None:
    monkeypatch.setattr(forked_read.sys, "platform", "linux")
    monkeypatch.setenv(WORKERS_ENV, setting)
    assert workers(5) == n  # never more processes than files


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("two", "PV_READ_WORKERS='two' is not a whole number; set it to 1 or more"),
        ("0", "PV_READ_WORKERS='0': at least one process reads; set it to 1 or more"),
    ],
)
def test_a_bad_setting_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch, setting: str, message: str) -> None:
    monkeypatch.setenv(WORKERS_ENV, setting)
    with pytest.raises(ConfigError) as refused:
        workers(1000)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("lint", "pv lint: PV_READ_WORKERS='two' is not a whole number; set it to 1 or more"),
        (
            "validate",
            "pv validate: configuration error: PV_READ_WORKERS='two' is not a whole number; set it to 1 or more",
        ),
    ],
)
def test_a_command_says_what_is_wrong_with_the_setting(
    cli: Invoke, tree: Path, monkeypatch: pytest.MonkeyPatch, command: str, said: str
) -> None:
    monkeypatch.setenv(WORKERS_ENV, "two")
    code, out = cli(command, "contracts", cwd=tree)
    assert (code, out.strip().splitlines()[-1]) == (2, said)
