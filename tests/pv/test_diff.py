"""pv diff: bump rules on pairs of contracts, bound direction, versions, git, and lint's changelog gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pv.config import load_config
from pv.diff import Bump, bound_change, diff_contracts, version_bump
from pv.lint import LintOptions, lint
from pv.loader import load_contract_file
from pv.model import Contract

from .cli_trees import FIXTURES, Invoke, commit_all, git

PAIRS = FIXTURES / "diff"
BASE = PAIRS / "base.yaml"


def contract(path: Path) -> Contract:
    loaded = load_contract_file(path)
    assert loaded.contract is not None, loaded.diagnostics
    return loaded.contract


@pytest.mark.parametrize(
    ("new", "required", "kinds", "sufficient"),
    [
        ("falsifier_added.yaml", Bump.MINOR, {("falsifiers", "FALSIFY-LOSS-003", "added")}, True),
        ("falsifier_removed.yaml", Bump.MAJOR, {("falsifiers", "FALSIFY-LOSS-002", "removed")}, False),
        ("bound_loosened.yaml", Bump.MAJOR, {("falsifiers", "FALSIFY-LOSS-001", "loosened")}, True),
        ("bound_tightened.yaml", Bump.MINOR, {("falsifiers", "FALSIFY-LOSS-002", "tightened")}, False),
        ("params_changed.yaml", Bump.MINOR, {("falsifiers", "FALSIFY-LOSS-001", "changed")}, True),
        ("reworded.yaml", Bump.PATCH, {("falsifiers", "FALSIFY-LOSS-002", "reworded")}, True),
        ("promoted.yaml", Bump.NONE, set(), True),
    ],
)
def test_bump_rules_on_pairs(new: str, required: Bump, kinds: set[tuple[str, str, str]], sufficient: bool) -> None:
    d = diff_contracts(contract(BASE), contract(PAIRS / new))
    assert {(c.section, c.subject, c.kind) for c in d.changes} == kinds
    assert d.required is required
    assert d.sufficient is sufficient


def test_a_diff_against_itself_is_empty() -> None:
    d = diff_contracts(contract(BASE), contract(BASE))
    assert d.changes == [] and d.required is Bump.NONE and d.declared is Bump.NONE and d.sufficient


def _edited(**edits: object) -> Contract:
    data = yaml.safe_load(BASE.read_text())
    for dotted, value in edits.items():
        node = data
        *parents, last = dotted.split(".")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return Contract.model_validate(data)


@pytest.mark.parametrize(
    ("edits", "required", "fragment"),
    [
        ({"falsification_tests.0.ship_blocking": False}, Bump.MAJOR, "no longer ship-blocking"),
        ({"falsification_tests.1.ship_blocking": True}, Bump.MINOR, "now ship-blocking"),
        ({"falsification_tests.0.mutant": None}, Bump.MAJOR, "mutant removed"),
        ({"falsification_tests.0.mutant": "engine.faults:other"}, Bump.MINOR, "mutant engine.faults:bad_init ->"),
        ({"falsification_tests.1.expect": None}, Bump.MAJOR, "expect removed"),
        ({"falsification_tests.1.check": "falsifiers.loss:speed2"}, Bump.MINOR, "check:"),
        ({"falsification_tests.1.launch": {"nproc": 2}}, Bump.MINOR, "launch: None -> {'nproc': 2}"),
        ({"proof_obligations.0.tolerance": 0.2}, Bump.MAJOR, "tolerance loosened: 0.1 -> 0.2"),
        ({"proof_obligations.0.tolerance": 0.05}, Bump.MINOR, "tolerance tightened"),
        ({"proof_obligations.0.property": "step-0 loss is close to chance"}, Bump.PATCH, "reworded: property"),
        ({"metadata.description": "Other words."}, Bump.PATCH, "description changed"),
        ({"metadata.depends_on": ["other-v1"]}, Bump.MINOR, "now depends on other-v1"),
        ({"metadata.id": "renamed-v1"}, Bump.MAJOR, "contract id loss-claim-v1 -> renamed-v1"),
        ({"proof_obligations": []}, Bump.MAJOR, "obligation removed"),
        ({"equations": {"loss": {"formula": "L = -log p"}}}, Bump.MINOR, "entry added"),
    ],
)
def test_section_rules(edits: dict[str, object], required: Bump, fragment: str) -> None:
    d = diff_contracts(contract(BASE), _edited(**edits))
    assert d.required is required, d.changes
    assert any(fragment in c.detail for c in d.changes), d.changes


@pytest.mark.parametrize(
    ("before", "after", "required", "fragment"),
    [
        ({"seeds": 3}, {"seeds": 2}, Bump.MAJOR, "cases dropped: [2]"),
        ({"seeds": 3}, {"seeds": 4}, Bump.MINOR, "cases added: [3]"),
        ({"parametrize": {"x": [1, 2]}}, {"parametrize": {"x": [2]}}, Bump.MAJOR, "cases dropped: [1]"),
        ({"seeds": 2}, {"seeds": 2, "aggregate": "mean(loss) < 2"}, Bump.MINOR, "aggregate added"),
        ({"seeds": 2, "aggregate": "mean(loss) < 2"}, {"seeds": 2}, Bump.MAJOR, "aggregate removed"),
        (
            {"seeds": 2, "aggregate": "mean(loss) < 2"},
            {"seeds": 2, "aggregate": "mean(loss) < 3"},
            Bump.MAJOR,
            "aggregate",
        ),
    ],
)
def test_cases_and_aggregates(
    before: dict[str, object], after: dict[str, object], required: Bump, fragment: str
) -> None:
    old = _edited(**{f"falsification_tests.1.{k}": v for k, v in before.items()})
    new = _edited(**{f"falsification_tests.1.{k}": v for k, v in after.items()})
    d = diff_contracts(old, new)
    assert d.required is required, d.changes
    assert any(fragment in c.detail for c in d.changes), d.changes


def test_status_version_and_changelog_never_count() -> None:
    edited = _edited(
        **{
            "metadata.status": "ACTIVE",
            "metadata.version": "9.9.9",
            "metadata.changelog": [{"version": "9.9.9", "date": "2026-05-05", "change": "x"}],
        }
    )
    d = diff_contracts(contract(BASE), edited)
    assert d.changes == [] and d.required is Bump.NONE


@pytest.mark.parametrize(
    ("old", "new", "params", "bump", "kind"),
    [
        ("0 < x <= 0.05", "0 < x <= 0.08", {}, Bump.MAJOR, "loosened"),
        ("0 < x <= 0.05", "0 < x <= 0.03", {}, Bump.MINOR, "tightened"),
        ("0 < x <= 0.05", "-1 < x <= 0.05", {}, Bump.MAJOR, "loosened"),
        ("x >= 3", "x >= 2", {}, Bump.MAJOR, "loosened"),
        ("x > 3", "x > 4", {}, Bump.MINOR, "tightened"),
        ("3 > x", "4 > x", {}, Bump.MAJOR, "loosened"),
        ("x == 3", "x == 4", {}, Bump.MAJOR, "changed"),
        ("x != 3", "x != 4", {}, Bump.MAJOR, "changed"),
        ("x in [1, 2]", "x in [1, 3]", {}, Bump.MAJOR, "changed"),
        ("x <= 0.05", "y <= 0.05", {}, Bump.MAJOR, "changed"),
        ("x <= 0.05", "x < 0.05", {}, Bump.MAJOR, "changed"),
        ("not (x > 3)", "not (x > 4)", {}, Bump.MAJOR, "loosened"),
        ("x - 1 >= 0", "x - 2 >= 0", {}, Bump.MINOR, "tightened"),
        ("x <= 1 and y >= 2", "x <= 1 and y >= 1", {}, Bump.MAJOR, "loosened"),
        ("x <= 1 and y >= 2", "x <= 0.5 and y >= 3", {}, Bump.MINOR, "tightened"),
        ("x <= 1 and y >= 2", "x <= 0.5 and y >= 1", {}, Bump.MAJOR, "loosened"),
        ("x <= 0.7 * ln(v)", "x <= 0.8 * ln(v)", {"v": 64}, Bump.MAJOR, "loosened"),
        ("x <= 0.7 * ln(v)", "x <= 0.6 * ln(v)", {"v": 64}, Bump.MINOR, "tightened"),
        # the sign of ln(v) is not known without the params: no direction can be claimed
        ("x <= 0.7 * ln(v)", "x <= 0.6 * ln(v)", {}, Bump.MAJOR, "changed"),
        ("x <= n / 2", "x <= n / 4", {"n": 8}, Bump.MINOR, "tightened"),
        ("abs(x - 1) < 0.1", "abs(x - 1) < 0.2", {}, Bump.MAJOR, "loosened"),
        ("abs(x - 1) < 0.1", "abs(x - 2) < 0.1", {}, Bump.MAJOR, "changed"),
        ("x <= max(1, 2)", "x <= max(1, 3)", {}, Bump.MAJOR, "loosened"),
        ("x <= 0.7*ln(v)", "x <= 0.7 * ln( v )", {}, Bump.PATCH, "reworded"),
        ("x <=", "x <= 1", {}, Bump.MAJOR, "changed"),
    ],
)
def test_bound_direction(old: str, new: str, params: dict[str, int], bump: Bump, kind: str) -> None:
    got, got_kind, detail = bound_change(old, new, params)
    assert (got, got_kind) == (bump, kind), detail


def test_an_unchanged_bound_is_no_change() -> None:
    assert bound_change("x <= 1", "x <= 1")[0] is Bump.NONE


@pytest.mark.parametrize(
    ("old", "new", "bump"),
    [
        ("1.0.0", "1.0.0", Bump.NONE),
        ("1.0.0", "1.0.1", Bump.PATCH),
        ("1.0.9", "1.1.0", Bump.MINOR),
        ("1.4.2", "2.0.0", Bump.MAJOR),
        ("1.1.0-rc.1", "1.1.0", Bump.PATCH),
        ("1.1.0", "1.0.9", None),
        ("1.0", "1.1.0", None),
    ],
)
def test_version_bump(old: str, new: str, bump: Bump | None) -> None:
    assert version_bump(old, new) is bump


# --- the command ---------------------------------------------------------------------------------


def test_cli_pair_exit_codes_and_text(cli: Invoke, tmp_path: Path) -> None:
    code, out = cli("diff", str(BASE), str(PAIRS / "falsifier_added.yaml"), cwd=tmp_path)
    assert code == 0
    assert "falsifiers:" in out and "+ FALSIFY-LOSS-003: falsifier added  [minor]" in out
    assert "required bump: minor; declared: minor (1.0.0 -> 1.1.0): ok" in out

    code, out = cli("diff", str(BASE), str(PAIRS / "falsifier_removed.yaml"), cwd=tmp_path)
    assert code == 1
    assert "- FALSIFY-LOSS-002: falsifier removed  [major]" in out and "NOT ENOUGH" in out


def test_cli_json(cli: Invoke, tmp_path: Path) -> None:
    code, out = cli("diff", "--json", str(BASE), str(PAIRS / "bound_loosened.yaml"), cwd=tmp_path)
    assert code == 0
    data = json.loads(out)
    (d,) = data["diffs"]
    assert d["required"] == "major" and d["declared"] == "major" and d["sufficient"] is True
    assert d["changes"][0]["kind"] == "loosened" and "0.9 * ln(vocab_size)" in d["changes"][0]["detail"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((), "give two contract files"),
        ((str(BASE),), "give two contract files"),
        ((str(BASE), "missing.yaml"), "missing.yaml: no such file"),
        ((str(BASE), str(PAIRS / "not_a_contract.yaml")), "is not a valid contract"),
    ],
)
def test_cli_bad_input_is_usage(cli: Invoke, tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    code, out = cli("diff", *args, cwd=tmp_path)
    assert code == 2 and fragment in out


def _write(root: Path, name: str, text: str) -> Path:
    path = root / "contracts" / name
    path.write_text(text.replace("falsifiers.loss:", "repochecks.loss:"))
    return path


def test_cli_git_ref(cli: Invoke, repo: Path) -> None:
    base = BASE.read_text().replace("loss-claim-v1", "loss")
    _write(repo, "loss.yaml", base)
    commit_all(repo)
    code, out = cli("diff", "--git", "HEAD", cwd=repo)
    assert code == 0 and "0 changed contract(s) since HEAD" in out

    _write(repo, "loss.yaml", base.replace("0.7 * ln", "0.9 * ln"))  # loosened, no bump
    _write(repo, "fresh.yaml", base.replace("id: loss", "id: fresh"))  # untracked: nothing to compare
    code, out = cli("diff", "--git", "HEAD", cwd=repo)
    assert code == 1
    assert "contracts/loss.yaml: 1.0.0 -> 1.0.0" in out and "bound loosened" in out
    assert "contracts/fresh.yaml: new since HEAD" in out
    assert "1 changed contract(s) since HEAD; 1 without a sufficient version bump" in out

    _write(repo, "loss.yaml", base.replace("0.7 * ln", "0.9 * ln").replace("version: 1.0.0", "version: 2.0.0"))
    code, out = cli("diff", "--git", "HEAD", "contracts/loss.yaml", cwd=repo)
    assert code == 0 and "required bump: major; declared: major" in out and "fresh" not in out


def test_cli_git_errors(cli: Invoke, repo: Path, tmp_path: Path) -> None:
    _write(repo, "loss.yaml", BASE.read_text())
    commit_all(repo)
    code, out = cli("diff", "--git", "no-such-ref", cwd=repo)
    assert code == 2 and "'no-such-ref' does not name a commit" in out
    code, out = cli("diff", "--git", "--upload-pack=x", cwd=repo)
    assert code == 2
    outside = tmp_path / "plain"
    (outside / "contracts").mkdir(parents=True)
    code, out = cli("diff", "--git", "HEAD", cwd=outside)
    assert code == 2 and "not inside a git repository" in out


# --- lint's changelog gate -----------------------------------------------------------------------


def _bump_findings(root: Path) -> list[str]:
    report = lint(load_config(root), LintOptions(use_state=False))
    (gate,) = [g for g in report.gates if g.name == "changelog"]
    assert gate.state != "skipped", gate.skip_reason  # the gate ran: an empty list means something
    return [f.message for f in report.findings if f.code == "PVL806"]


def test_changelog_gate_rejects_a_bump_too_small_against_head(repo: Path) -> None:
    base = BASE.read_text().replace("loss-claim-v1", "loss")
    _write(repo, "loss.yaml", base)
    commit_all(repo)
    assert _bump_findings(repo) == []

    removed = base[: base.index("  - id: FALSIFY-LOSS-002")]
    bumped_minor = removed.replace("version: 1.0.0", "version: 1.1.0").replace(
        '    - {version: 1.0.0, date: "2026-01-01", change: initial}',
        '    - {version: 1.1.0, date: "2026-02-01", change: drop speed}\n'
        '    - {version: 1.0.0, date: "2026-01-01", change: initial}',
    )
    _write(repo, "loss.yaml", bumped_minor)
    (message,) = _bump_findings(repo)
    assert "required bump: major; declared: minor (1.0.0 -> 1.1.0): NOT ENOUGH against HEAD" in message
    assert "FALSIFY-LOSS-002: falsifier removed" in message

    _write(repo, "loss.yaml", bumped_minor.replace("1.1.0", "2.0.0"))
    assert _bump_findings(repo) == []


def test_changelog_gate_checks_against_a_base_ref_once_the_change_is_committed(cli: Invoke, repo: Path) -> None:
    """In pull-request CI the change is already in HEAD: only ``--base <target branch>`` sees it."""
    base = BASE.read_text().replace("loss-claim-v1", "loss")
    _write(repo, "loss.yaml", base)
    commit_all(repo, "initial")
    git(repo, "branch", "target")
    unbumped = base[: base.index("  - id: FALSIFY-LOSS-002")]  # a falsifier removed, version kept
    _write(repo, "loss.yaml", unbumped)
    commit_all(repo, "drop a falsifier")
    assert _bump_findings(repo) == []  # against HEAD nothing changed
    report = lint(load_config(repo), LintOptions(use_state=False, base_ref="target"))
    (message,) = [f.message for f in report.findings if f.code == "PVL806"]
    assert "required bump: major; declared: none" in message and "NOT ENOUGH against target" in message

    code, out = cli("lint", "--no-state", "--base", "target", cwd=repo)
    assert code == 1 and "against target" in out and "pv diff --git target" in out
    code, out = cli("lint", "--no-state", "--base", "no-such-branch", cwd=repo)
    assert code == 2 and "--base no-such-branch: 'no-such-branch' does not name a commit" in out


def test_changelog_gate_passes_without_git_or_history(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "contracts").mkdir(parents=True)
    (plain / "pyproject.toml").write_text((repo / "pyproject.toml").read_text())
    _write(plain, "loss.yaml", BASE.read_text().replace("loss-claim-v1", "loss"))
    assert _bump_findings(plain) == []
    # a repository without commits, and a contract that is not committed yet
    _write(repo, "loss.yaml", BASE.read_text().replace("loss-claim-v1", "loss"))
    assert _bump_findings(repo) == []


def test_changelog_gate_ignores_what_promote_writes(repo: Path) -> None:
    _write(repo, "loss.yaml", BASE.read_text().replace("loss-claim-v1", "loss"))
    commit_all(repo)
    promoted = (PAIRS / "promoted.yaml").read_text().replace("loss-claim-v1", "loss")
    _write(repo, "loss.yaml", promoted)
    assert _bump_findings(repo) == []
