"""What git saw of a ledger, on the paths a plain removal does not take: a line forgotten on
purpose among lost ones, a line that moved, a ledger file or a whole contract folder gone from
the working tree, and the ledger the caller already read."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pv.evidence import ledger as lg

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "evidence" / "c-v1"
        self.path = self.folder / lg.LEDGER_FILE
        subprocess.run(["git", "init", "-q", str(root)], check=True)

    def git(self, *args: str) -> None:
        subprocess.run(["git", "-C", str(self.root), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True)

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def append(self, kind: str, run_id: str, **extra: str) -> None:
        with lg.locked(self.folder) as led:
            lg.append(led, kind, run_id, f"d-{run_id}", verdicts={"F1": "survived"}, **extra)  # type: ignore[arg-type]

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines()


def removed(run_id: str, where: str = "the working tree") -> str:
    return (
        f"evidence/c-v1/ledger.jsonl: {where} removed the line of bundle {run_id}; if that was an accident, "
        f"`pv evidence forget {run_id} --reason ...` records it"
    )


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path)
    for run_id in ("r1", "r2", "r3"):
        r.append("bundle", run_id)
    return r


def test_a_forgotten_line_is_lost_but_no_problem_and_the_next_one_still_is(repo: Repo) -> None:
    repo.append("forgotten", "r1", reason="lost in a rebase")
    repo.commit("evidence")
    r1, r2, r3, forgot = repo.lines()
    repo.path.write_text("\n".join([r3, forgot]) + "\n")  # r1 (forgotten) and r2 (not) removed
    found = lg.history(repo.path)
    assert found.problems == [removed("r2")]
    assert found.lost == {"r1": r1, "r2": r2}


def test_a_line_that_moved_is_not_lost_and_the_lines_after_it_are_read(repo: Repo) -> None:
    repo.commit("evidence")
    r1, r2, r3 = repo.lines()
    repo.path.write_text("\n".join([r2, r3, r1]) + "\n")  # r1 moved: git saw it removed, the file has it
    repo.commit("reordered")
    repo.path.write_text("\n".join([r2, r1]) + "\n")  # r3 removed in the working tree
    found = lg.history(repo.path)
    assert found.problems == [removed("r3")]
    assert found.lost == {"r3": r3}


def test_a_ledger_file_deleted_from_the_working_tree_loses_every_line(repo: Repo) -> None:
    repo.commit("evidence")
    repo.path.unlink()
    found = lg.history(repo.path, lg.Ledger(repo.path))
    assert found.problems == [removed("r1"), removed("r2"), removed("r3")]


def test_a_contract_folder_deleted_whole_is_still_read_from_git(repo: Repo) -> None:
    repo.commit("evidence")
    shutil.rmtree(repo.folder)
    found = lg.history(repo.path)
    assert found.notes == []
    assert found.problems == [removed("r1"), removed("r2"), removed("r3")]


def test_the_ledger_the_caller_read_is_the_one_used(repo: Repo) -> None:
    repo.commit("evidence")
    repo.path.write_text(repo.lines()[0] + "\n")
    told = lg.read(repo.folder)
    told.entries.append(lg.Entry(9, "forgotten", "r2", "d-r2", {}, reason="said elsewhere"))
    assert lg.history(repo.path, told).problems == [removed("r3")]
    assert lg.history(repo.path).problems == [removed("r2"), removed("r3")]
