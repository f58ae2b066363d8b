"""The review without a base (``pv review`` before a pull request has one), built in this process
from evidence the plugin wrote: every row is unchanged unless its head verdict fails, the head is
the newest current run of each falsifier, and a bundle that no longer verifies is no head at all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pv.project import Project
from pv.review.compare import ReportError, Review, changed_selection, review
from tests.pv.review.helpers import means_project

CONTRACT = Path("contracts") / "mean-v1.yaml"


def _evidence(pytester: pytest.Pytester, outcome: pytest.ExitCode = pytest.ExitCode.OK) -> None:
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == outcome


def _runs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "evidence" / "mean-v1").iterdir() if p.is_dir())


def _review(root: Path) -> Review:
    return review(Project.open(root), [root / CONTRACT])


def test_without_a_base_a_falsified_head_is_a_regression_and_a_survivor_is_unchanged(
    pytester: pytest.Pytester,
) -> None:
    means_project(pytester, "value >= 1", "true")
    (pytester.path / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs) + 1\n")
    _evidence(pytester, pytest.ExitCode.TESTS_FAILED)
    (run,) = _runs(pytester.path)
    r = _review(pytester.path)
    assert (r.base_ref, r.base_commit) == (None, None)
    assert [
        (row.falsifier_id, row.kind, row.why, row.base_verdict, row.head_verdict, row.head_run) for row in r.rows
    ] == [
        ("FALSIFY-MEAN-001", "regressed", "falsified", None, "falsified", run),
        ("FALSIFY-MEAN-002", "unchanged", "", None, "survived", run),
    ]
    (contract,) = r.contracts
    assert (contract.base_run, contract.base_digest, contract.base_missing, contract.head_runs) == (
        None,
        None,
        "",
        [run],
    )
    assert [[(p.run_id, p.verdict) for p in row.history] for row in r.rows] == [
        [(run, "falsified")],
        [(run, "survived")],
    ]
    assert [[(v.name, v.base, v.head) for v in row.values] for row in r.rows] == [[("value", None, 3.0)]] * 2


def test_without_a_base_an_error_at_the_head_is_a_regression(pytester: pytest.Pytester) -> None:
    means_project(pytester, "value >= 1", "true")
    other = pytester.path / "mychecks" / "other.py"
    other.write_text(
        other.read_text().replace("    return {'value'", "    raise RuntimeError('broken')\n    return {'value'")
    )
    _evidence(pytester, pytest.ExitCode.TESTS_FAILED)
    rows = {row.falsifier_id: row for row in _review(pytester.path).rows}
    assert (rows["FALSIFY-MEAN-002"].head_verdict, rows["FALSIFY-MEAN-002"].kind, rows["FALSIFY-MEAN-002"].why) == (
        "error", "regressed", "falsified",
    )  # fmt: skip
    assert (rows["FALSIFY-MEAN-001"].kind, rows["FALSIFY-MEAN-001"].why) == ("unchanged", "")


def test_the_head_is_the_newest_of_two_current_runs(pytester: pytest.Pytester) -> None:
    means_project(pytester, "value >= 1", "true")
    _evidence(pytester)
    _evidence(pytester)
    older, newer = _runs(pytester.path)
    r = _review(pytester.path)
    assert [(row.head_verdict, row.head_run) for row in r.rows] == [("survived", newer), ("survived", newer)]
    assert r.contracts[0].head_runs == [newer] and older != newer


def test_a_bundle_that_no_longer_verifies_is_no_head(pytester: pytest.Pytester) -> None:
    means_project(pytester, "value >= 1", "true")
    _evidence(pytester)
    (pytester.path / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)  # edited\n")
    r = _review(pytester.path)
    assert [(row.head_verdict, row.head_run, row.kind) for row in r.rows] == [
        (None, None, "unchanged"),
        (None, None, "unchanged"),
    ]
    assert r.contracts[0].head_runs == []


def test_the_changed_selection_names_what_a_change_touches_and_refuses_an_unknown_base(
    pytester: pytest.Pytester,
) -> None:
    means_project(pytester, "value >= 1", "true")
    root = pytester.path
    text = (root / CONTRACT).read_text()  # a second contract over the same checkers, not asked about
    (root / "contracts" / "means-again-v1.yaml").write_text(text.replace("mean-v1", "means-again-v1"))
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "code")):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)
    (root / "mychecks" / "other.py").write_text((root / "mychecks" / "other.py").read_text() + "# edited\n")
    project = Project.open(root)
    selected = changed_selection(project, "main", [root / CONTRACT])
    assert [(c.contract_id, c.falsifier_id, c.reasons) for c in selected] == [
        ("mean-v1", "FALSIFY-MEAN-002", ["code: 1 edited (mychecks/other.py)"])
    ]
    with pytest.raises(ReportError, match=r"^--base nope: "):
        changed_selection(project, "nope", [root / CONTRACT])


def test_every_contract_reviewed_has_its_rows(pytester: pytest.Pytester) -> None:
    means_project(pytester, "value >= 1", "true")
    second = pytester.path / "contracts" / "means-again-v1.yaml"
    text = (pytester.path / CONTRACT).read_text()
    second.write_text(text.replace("mean-v1", "means-again-v1").replace("FALSIFY-MEAN-", "FALSIFY-AGAIN-"))
    _evidence(pytester)
    r = review(Project.open(pytester.path), [pytester.path / CONTRACT, second])
    assert [(row.contract_id, row.falsifier_id) for row in r.rows] == [
        ("mean-v1", "FALSIFY-MEAN-001"),
        ("mean-v1", "FALSIFY-MEAN-002"),
        ("means-again-v1", "FALSIFY-AGAIN-001"),
        ("means-again-v1", "FALSIFY-AGAIN-002"),
    ]


def test_a_review_against_a_base_reads_the_repository_whatever_folder_it_runs_in(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    means_project(pytester, "value >= 1", "true")
    root = pytester.path
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "code"], cwd=root, check=True)
    _evidence(pytester)  # measured at that commit: on the base's line
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "its evidence"], cwd=root, check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True)
    (run,) = _runs(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("elsewhere"))
        r = review(Project.open(root), [root / CONTRACT], base="main")
    assert (r.base_commit, r.head_commit) == (head.stdout.strip(), head.stdout.strip())
    assert [(row.kind, row.base_run, row.head_run, len(row.history)) for row in r.rows] == [
        ("unchanged", run, run, 1),
        ("unchanged", run, run, 1),
    ]
