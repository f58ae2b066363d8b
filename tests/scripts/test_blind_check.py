"""scripts/blind_check.py: diffs applied to clean clones, judged by the contracts alone."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.scripts.test_adoption import readme_steps
from tests.scripts_loader import load_script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
blind = load_script("scripts/blind_check.py")


def _git(root: Path, *args: str) -> str:
    argv = ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args]
    return subprocess.run(argv, cwd=root, check=True, capture_output=True, text=True).stdout


def _project(root: Path) -> Path:
    files, _ = readme_steps()  # the README's first contract: mysystem.stats.mean and its falsifier
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    for package in ("mysystem", "mychecks"):
        (root / package / "__init__.py").touch()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a first contract")
    return root


def _diff(repo: Path, rel: str, old: str, new: str, out: Path) -> None:
    path = repo / rel
    original = path.read_text()
    path.write_text(original.replace(old, new) if old else original + new)
    out.write_text(_git(repo, "diff"))
    path.write_text(original)


def test_each_diff_is_killed_survives_or_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path / "repo")
    diffs = tmp_path / "diffs"
    diffs.mkdir()
    _diff(repo, "mysystem/stats.py", "/ len(xs)", "/ (len(xs) + 1)", diffs / "1-off-by-one.diff")
    _diff(repo, "mysystem/stats.py", "", "# a comment changes nothing the contract reads\n", diffs / "2-comment.patch")
    _diff(repo, "contracts/mean-v1.yaml", '"value == 2"', '"value >= 0"', diffs / "3-looser-contract.diff")
    (diffs / "4-stale.diff").write_text(
        (diffs / "1-off-by-one.diff").read_text().replace("return sum(xs) / len(xs)", "return sum(ys) / len(ys)")
    )
    (diffs / "notes.txt").write_text("not a diff: ignored")
    report = tmp_path / "out.json"
    code = blind.main([str(diffs), "--repo", str(repo), "--select", "contracts", "--json", str(report)])
    assert code == 1  # one diff survived
    outcomes = {o["diff"]: o for o in json.loads(report.read_text())}
    assert list(outcomes) == ["1-off-by-one.diff", "2-comment.patch", "3-looser-contract.diff", "4-stale.diff"]
    assert (outcomes["1-off-by-one.diff"]["verdict"], outcomes["1-off-by-one.diff"]["killer"]) == (
        "killed",
        "contracts/mean-v1.yaml::FALSIFY-MEAN-001",
    )
    assert outcomes["2-comment.patch"]["verdict"] == "survived"
    assert outcomes["3-looser-contract.diff"]["verdict"] == "refused"
    assert "contracts/mean-v1.yaml" in outcomes["3-looser-contract.diff"]["detail"]
    assert outcomes["4-stale.diff"]["verdict"] == "not applied"
    out = capsys.readouterr().out
    assert "baseline: every selected falsifier passes" in out
    assert "1 of 2 diffs killed (50%); 2 not applied or refused" in out
    assert _git(repo, "status", "--porcelain") == ""  # the repository itself is never touched


def test_a_suite_that_fails_without_a_diff_stops_the_check(tmp_path: Path) -> None:
    repo = _project(tmp_path / "repo")
    stats = repo / "mysystem" / "stats.py"
    stats.write_text(stats.read_text().replace("/ len(xs)", "/ 2"))
    _git(repo, "commit", "-q", "-am", "broken on main")
    diffs = tmp_path / "diffs"
    diffs.mkdir()
    (diffs / "a.diff").write_text("")
    with pytest.raises(SystemExit, match=r"the suite fails without any diff .*FALSIFY-MEAN-001"):
        blind.main([str(diffs), "--repo", str(repo), "--select", "contracts"])


def test_usage_errors_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path / "repo")
    with pytest.raises(SystemExit) as exc:
        blind.main([str(tmp_path / "nowhere"), "--repo", str(repo)])
    assert exc.value.code == 2 and "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        blind.main([str(tmp_path / "empty"), "--repo", str(repo)])
    assert "no *.diff or *.patch file" in capsys.readouterr().err
    (tmp_path / "empty" / "x.diff").write_text("")
    with pytest.raises(SystemExit):
        blind.main([str(tmp_path / "empty"), "--repo", str(repo), "--base", "no-such-ref"])
    assert "is not a commit" in capsys.readouterr().err
