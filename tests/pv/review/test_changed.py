"""What a change touches, read in this process from a folder other than the project's: each
falsifier's reasons (contract entry, bound, checker, code under test, conftest, new falsifier or
contract) exactly as the review and `pv review changed` print them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pv.project import Project
from pv.review.changed import Changed, _code_reasons, changed_falsifiers
from tests.pv.review.helpers import CONTRACT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "mysystem").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["mychecks"]\nfault_packages = ["mysystem"]\n'
    )
    (root / "mysystem" / "__init__.py").write_text("")
    (root / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    (root / "mychecks").mkdir()
    (root / "mychecks" / "__init__.py").write_text("")
    checker = (
        "import pv\nfrom mysystem import stats\n\n\n@pv.checker(observes=['value'])\n"
        "def {name}():\n    return {{'value': stats.mean([1, 2, 3])}}\n"
    )
    (root / "mychecks" / "checks.py").write_text(checker.format(name="mean_of_three"))
    (root / "mychecks" / "other.py").write_text(checker.format(name="mean_again"))
    (root / "contracts").mkdir()
    (root / "contracts" / "mean-v1.yaml").write_text(CONTRACT.format(bound="value >= 1", blocking="false"))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # git and the files are read from the project, wherever pv runs
    return root


def changed(root: Path) -> list[Changed]:
    return changed_falsifiers(Project.open(root), "main")


def test_nothing_changed(project: Path) -> None:
    assert changed(project) == []


def test_a_bound_and_an_entry_field(project: Path) -> None:
    (project / "contracts" / "mean-v1.yaml").write_text(CONTRACT.format(bound="value >= 1.5", blocking="true"))
    assert changed(project) == [
        Changed(
            "mean-v1",
            "contracts/mean-v1.yaml",
            "FALSIFY-MEAN-002",
            ["contract: ship_blocking changed", "bound moved"],
            bound=("value >= 1", "value >= 1.5"),
        )
    ]


def test_one_checker_module_and_the_shared_code(project: Path) -> None:
    other = project / "mychecks" / "other.py"
    other.write_text(other.read_text() + "# edited\n")
    assert [(c.falsifier_id, c.reasons) for c in changed(project)] == [
        ("FALSIFY-MEAN-002", ["code: 1 edited (mychecks/other.py)"])
    ]
    (project / "mysystem" / "helpers.py").write_text("X = 1\n")
    stats = project / "mysystem" / "stats.py"
    stats.write_text("from mysystem.helpers import X\n" + stats.read_text())
    found = {c.falsifier_id: c.reasons for c in changed(project)}
    assert found == {
        "FALSIFY-MEAN-001": ["code: 1 edited and 1 added (mysystem/stats.py, mysystem/helpers.py)"],
        "FALSIFY-MEAN-002": ["code: 2 edited and 1 added (mychecks/other.py, mysystem/stats.py, mysystem/helpers.py)"],
    }


def test_a_new_contract(project: Path) -> None:
    text = (project / "contracts" / "mean-v1.yaml").read_text()
    (project / "contracts" / "twin-v1.yaml").write_text(text.replace("mean-v1", "twin-v1"))
    assert [(c.contract_id, c.contract_path, c.falsifier_id, c.reasons, c.new) for c in changed(project)] == [
        ("twin-v1", "contracts/twin-v1.yaml", "FALSIFY-MEAN-001", ["new contract"], True),
        ("twin-v1", "contracts/twin-v1.yaml", "FALSIFY-MEAN-002", ["new contract"], True),
    ]


def test_a_falsifier_added_to_a_contract(project: Path) -> None:
    contract = project / "contracts" / "mean-v1.yaml"
    contract.write_text(
        contract.read_text()
        + "  - id: FALSIFY-MEAN-003\n    prediction: p\n    check: mychecks.checks:mean_of_three\n"
        + '    expect: "value > 0"\n    ship_blocking: false\n'
    )
    assert changed(project) == [
        Changed("mean-v1", "contracts/mean-v1.yaml", "FALSIFY-MEAN-003", ["new falsifier"], new=True)
    ]


def test_only_the_contracts_asked_for(project: Path) -> None:
    (project / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / 3\n")
    (project / "contracts" / "twin-v1.yaml").write_text(
        (project / "contracts" / "mean-v1.yaml").read_text().replace("mean-v1", "twin-v1")
    )
    found = changed_falsifiers(Project.open(project), "main", [project / "contracts" / "mean-v1.yaml"])
    assert {c.contract_id for c in found} == {"mean-v1"} and len(found) == 2


def test_code_reasons_name_at_most_three_files() -> None:
    now = {f"m/{c}.py": "new" for c in "abcde"} | {"contracts/x.yaml": "changed"}
    base: dict[str, str | None] = {"m/a.py": "old", "m/b.py": "old", "m/c.py": None, "contracts/x.yaml": "old"}
    assert _code_reasons(now, base, "contracts/x.yaml") == ["code: 2 edited and 3 added (m/a.py, m/b.py, m/c.py…)"]
    assert _code_reasons({"m/a.py": "x"}, {"m/a.py": "x"}, "c.yaml") == []
    assert _code_reasons({"m/a.py": "x"}, {}, "c.yaml") == ["code: 1 added (m/a.py)"]


def test_an_entry_field_alone_moves_no_bound_and_the_contract_file_is_not_code(project: Path) -> None:
    (project / "contracts" / "mean-v1.yaml").write_text(CONTRACT.format(bound="value >= 1", blocking="true"))
    assert changed(project) == [
        Changed("mean-v1", "contracts/mean-v1.yaml", "FALSIFY-MEAN-002", ["contract: ship_blocking changed"])
    ]


def test_the_contract_s_reasons_come_before_the_code_s(project: Path) -> None:
    text = CONTRACT.format(bound="value >= 1.5", blocking="true").replace(
        "the mean of three, again", "the mean of three, once more"
    )
    (project / "contracts" / "mean-v1.yaml").write_text(text)
    stats = project / "mysystem" / "stats.py"
    stats.write_text(stats.read_text() + "# edited\n")
    by_id = {c.falsifier_id: c.reasons for c in changed(project)}
    assert by_id == {
        "FALSIFY-MEAN-001": ["code: 1 edited (mysystem/stats.py)"],
        "FALSIFY-MEAN-002": [
            "contract: prediction, ship_blocking changed",
            "bound moved",
            "code: 1 edited (mysystem/stats.py)",
        ],
    }


def test_a_new_falsifier_says_so_before_its_code(project: Path) -> None:
    text = CONTRACT.format(bound="value >= 1", blocking="false") + (
        "  - id: FALSIFY-MEAN-003\n    prediction: p\n    check: mychecks.checks:mean_of_three\n"
        '    expect: "value == 2"\n    ship_blocking: false\n'
    )
    (project / "contracts" / "mean-v1.yaml").write_text(text)
    stats = project / "mysystem" / "stats.py"
    stats.write_text(stats.read_text() + "# edited\n")
    by_id = {c.falsifier_id: c.reasons for c in changed(project)}
    assert by_id["FALSIFY-MEAN-003"] == ["new falsifier", "code: 1 edited (mysystem/stats.py)"]


def test_the_code_reason_shows_three_files_and_an_ellipsis_past_three() -> None:
    base: dict[str, str | None] = {"a.py": "0", "b.py": "0", "c.py": "0", "d.py": None}
    now = {"a.py": "1", "b.py": "1", "c.py": "1", "d.py": "1", "k.yaml": "1"}
    assert _code_reasons(now, base, "k.yaml") == ["code: 3 edited and 1 added (a.py, b.py, c.py…)"]
    assert _code_reasons({k: now[k] for k in ("a.py", "b.py", "d.py")}, base, "k.yaml") == [
        "code: 2 edited and 1 added (a.py, b.py, d.py)"
    ]


def test_only_a_text_bound_is_shown() -> None:
    from pv.review.changed import _text

    assert (_text("x >= 1"), _text(5), _text(None)) == ("x >= 1", None, None)


def test_a_falsifier_without_a_check_is_read_with_the_contract_s_own_scope(project: Path) -> None:
    text = CONTRACT.format(bound="value >= 1", blocking="false") + (
        '  - id: FALSIFY-MEAN-003\n    prediction: p\n    expect: "value == 2"\n    ship_blocking: false\n'
    )
    (project / "contracts" / "mean-v1.yaml").write_text(text)
    assert [(c.falsifier_id, c.reasons) for c in changed(project)] == [("FALSIFY-MEAN-003", ["new falsifier"])]
