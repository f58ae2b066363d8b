"""The commands: pv evidence verify / gc, pv promote [--check], pv report [--base] [--format github]."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pv.app import app
from pv.cli import COMMAND_MODULES
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer, all_survive, result

for _module in COMMAND_MODULES:
    importlib.import_module(_module)

runner = CliRunner()


@pytest.fixture
def cli(project: Project, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    (project.root / "pyproject.toml").write_text(
        '[tool.pv]\ncontracts = "contracts"\nevidence = "evidence"\nfault_packages = ["engine"]\n'
    )
    monkeypatch.chdir(project.root)

    def invoke(*args: str) -> tuple[int, str]:
        res = runner.invoke(app, list(args))
        return res.exit_code, res.output

    return invoke


def test_verify_exit_codes(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    code, out = cli("evidence", "verify")
    assert code == 2 and "does not exist" in out
    project.evidence.mkdir()
    code, out = cli("evidence", "verify")
    assert code == 1 and "no bundles" in out
    bundle = write(all_survive())
    code, out = cli("evidence", "verify")
    assert code == 0 and "1 bundles: 1 ok" in out
    assert cli("evidence", "verify", str(bundle))[0] == 0
    assert cli("evidence", "verify", str(bundle.parent))[0] == 0
    (bundle / "bundle.json").write_text((bundle / "bundle.json").read_text().replace('"survived"', '"falsified"', 1))
    code, out = cli("evidence", "verify")
    assert code == 1 and "tampered: bundle.json: sha256 does not match the manifest" in out


def test_verify_stale_fails_unless_allowed(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    write(all_survive())
    project.contract.write_text(project.contract.read_text().replace("<= 3.0", "<= 9.0"))
    code, out = cli("evidence", "verify")
    assert code == 1 and "stale" in out and "contract edited since the run" in out
    assert cli("evidence", "verify", "--allow-stale")[0] == 0


def test_promote_check_then_promote(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    write(all_survive())
    before = project.contract.read_bytes()
    code, out = cli("promote", "--check")
    assert code == 1 and "would change DRAFT -> ACTIVE" in out
    assert project.contract.read_bytes() == before
    code, out = cli("promote", "contracts/demo-v1.yaml")
    assert code == 0 and "DRAFT -> ACTIVE" in out
    code, out = cli("promote", "--check")
    assert code == 0 and "ACTIVE (unchanged)" in out
    code, out = cli("evidence", "verify")
    assert code == 0, out  # promotion kept its own evidence current


def test_promote_refuses_an_invalid_contract(cli, project: Project) -> None:  # type: ignore[no-untyped-def]
    project.contract.write_text(
        project.contract.read_text().replace("kind: training-loop", "kind: training-loop\n  colour: red")
    )
    code, out = cli("promote")
    assert code == 2 and "does not validate" in out
    assert cli("promote", "nowhere/")[0] == 2


def test_gc_keeps_newest_and_the_backing_bundle(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    days = [write(all_survive(), started=f"2026-03-0{d}T10:00:00+00:00") for d in range(1, 3)]
    # two newer runs of the advisory falsifier alone: days[1] still holds the ship-blocking verdicts
    days += [
        write([result("FALSIFY-DEMO-003", Verdict.SURVIVED)], started=f"2026-03-0{d}T10:00:00+00:00") for d in (3, 4)
    ]
    leftover = project.evidence / "demo-v1" / ".tmp-20260301T100000000000Z-deadbeef-999999999"
    leftover.mkdir()
    code, out = cli("evidence", "gc", "--keep", "1", "--dry-run")
    assert code == 0 and all(d.exists() for d in days) and leftover.exists()
    code, out = cli("evidence", "gc", "--keep", "1")
    assert code == 0, out
    assert [d.exists() for d in days] == [False, True, False, True]  # days[1] backs the status; days[3] is newest
    assert not leftover.exists()
    # the ledger names what gc removed, and the evidence still reads as before
    lines = (project.evidence / "demo-v1" / "ledger.jsonl").read_text().splitlines()
    assert [json.loads(x)["kind"] for x in lines] == ["bundle"] * 4 + ["pruned"] * 2
    assert cli("evidence", "verify")[0] == 0
    assert cli("evidence", "gc", "--keep", "0")[0] == 2


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_report_markdown_and_changes_against_base(
    cli, project: Project, write: Writer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    write(
        [
            result("FALSIFY-DEMO-001", Verdict.SURVIVED, duration_s=1.0),
            result("FALSIFY-DEMO-002", Verdict.SKIPPED, skip_reason="no CUDA", skip_kind="hardware", mutant=None),
        ],
        started="2026-03-01T10:00:00+00:00",
    )
    _git(project.root, "init", "-q", "-b", "main")
    _git(project.root, "add", ".")
    _git(project.root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "base")
    # the pull request: a bound moves, the checker slows down, and the claim fails
    project.contract.write_text(project.contract.read_text().replace('"step0_loss <= 3.0"', '"step0_loss <= 2.0"'))
    slow = result("FALSIFY-DEMO-001", Verdict.FALSIFIED, duration_s=1.5, observations={"step0_loss": 2.1}, mutant=None)
    slow.expect = "step0_loss <= 2.0"
    write(
        [slow, result("FALSIFY-DEMO-002", Verdict.SKIPPED, skip_reason="no CUDA", skip_kind="hardware", mutant=None)],
        started="2026-03-02T10:00:00+00:00",
    )

    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out = cli("report", "--base", "main", "--format", "github")
    assert code == 0, out
    comment, _, commands = out.partition("</details>\n")
    assert summary.read_text() == "earlier step\n" + comment + "</details>\n"  # appended, not replaced
    assert comment.startswith("<!-- pv-review -->\n## pv review: `main` (")
    callout = "> [!CAUTION]\n> **1 regressed** · 0 improved · 1 unchanged · 0 new · **1 missing** · 1 bound moved"
    assert callout in comment
    # the base's value beside the head's, the bound and how much of it the head uses
    assert "| step0_loss | 2.1 | 2.1 | 0 | +0.0 % | ≤ 2 | 105 % |" in comment
    assert "survived → ❌ **falsified**" in comment
    assert "bound moved: `step0_loss <= 3.0` → `step0_loss <= 2.0`" in comment
    assert "reproduce: `pytest contracts/demo-v1.yaml::FALSIFY-DEMO-001 --pv-mutants -p no:cacheprovider`" in comment
    assert commands.startswith("::error file=contracts/demo-v1.yaml,line=")
    assert "title=FALSIFY-DEMO-001 regressed%3A survived → falsified::" in commands

    code, out = cli("report", "--base", "no-such-ref")
    assert code == 2 and "no-such-ref" in out
    assert cli("report", "--format", "pdf")[0] == 2


def test_report_without_evidence_says_so(cli, project: Project) -> None:  # type: ignore[no-untyped-def]
    code, out = cli("report")
    assert code == 0 and "> Head: 0 of 3 falsifiers run on the current code; mutants caught 0 of 0 run." in out
    assert "| `demo-v1` | DRAFT | no evidence | — | — | — |" in out


def test_report_shows_promotion_to_come(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    write(all_survive())
    code, out = cli("report")
    assert code == 0
    assert "> Status: `demo-v1` DRAFT → **ACTIVE**" in out
    assert "> Head: 3 of 3 falsifiers run on the current code; mutants caught 3 of 3 run." in out


def test_gc_keeps_the_bundle_a_promotion_names(cli, project: Project, write: Writer) -> None:  # type: ignore[no-untyped-def]
    first = write(all_survive(), started="2026-03-01T10:00:00+00:00")
    assert cli("promote")[0] == 0
    later = [write(all_survive(), started=f"2026-03-0{d}T10:00:00+00:00") for d in (2, 3, 4)]
    code, out = cli("evidence", "gc", "--keep", "1")
    assert code == 0, out
    assert [p.exists() for p in (first, *later)] == [True, False, False, True]


def test_the_reviews_rows_field_by_field(  # type: ignore[no-untyped-def]
    cli, project: Project, write: Writer, tmp_path: Path
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    first = write(
        [result("FALSIFY-DEMO-001", Verdict.SURVIVED), result("FALSIFY-DEMO-002", Verdict.SURVIVED)],
        started="2026-03-01T10:00:00+00:00",
    )
    _git(project.root, "init", "-q", "-b", "main")
    _git(project.root, "add", ".")
    _git(project.root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "base")
    # the pull request edits the contract's description: the head's run measured other contract bytes
    project.contract.write_text(project.contract.read_text().replace("a tiny training loop", "a small one"))
    failing = result("FALSIFY-DEMO-001", Verdict.FALSIFIED, observations={"step0_loss": 3.5}, mutant=None)
    failing.message = "FALSIFIED demo-v1::FALSIFY-DEMO-001: step0_loss(=3.5) <= 3.0\nmore"
    second = write([failing, result("FALSIFY-DEMO-002", Verdict.SURVIVED)], started="2026-03-02T10:00:00+00:00")
    code, out = cli("report", "--base", "main", "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    rows = {r["falsifier_id"]: r for r in doc["rows"]}
    text = project.contract.read_text().splitlines()
    line = next(n for n, t in enumerate(text, 1) if "id: FALSIFY-DEMO-001" in t)
    mutant_line = next(n for n, t in enumerate(text, 1) if n > line and "mutant:" in t)
    one = rows["FALSIFY-DEMO-001"]
    assert (one["contract_id"], one["contract_path"], one["line"], one["mutant_line"]) == (
        "demo-v1",
        "contracts/demo-v1.yaml",
        line,
        mutant_line,
    )
    assert (one["kind"], one["why"], one["base_verdict"], one["head_verdict"]) == (
        "regressed",
        "survived → falsified",
        "survived",
        "falsified",
    )
    assert (one["base_run"], one["head_run"], one["ship_blocking"]) == (first.name, second.name, True)
    assert one["message"] == "FALSIFIED demo-v1::FALSIFY-DEMO-001: step0_loss(=3.5) <= 3.0"
    assert one["reproduce"] == "pytest contracts/demo-v1.yaml::FALSIFY-DEMO-001 --pv-mutants -p no:cacheprovider"
    assert (one["base_mutant"], one["head_mutant"], one["mutant"]) == (True, None, "engine.faults:demo_fault")
    assert (one["base_expect"], one["head_expect"], one["bound_moved"], one["changed"]) == (
        "step0_loss <= 3.0",
        "step0_loss <= 0.7 * ln(vocab_size)",  # the contract's own; the runs recorded theirs
        False,
        [],
    )
    assert one["expect_now"] == "step0_loss(=3.5) <= 3.0"
    assert [(v["name"], v["base"], v["head"]) for v in one["values"]] == [("step0_loss", 2.1, 3.5)]
    two = rows["FALSIFY-DEMO-002"]
    assert (two["kind"], two["base_run"], two["head_run"], two["message"]) == ("unchanged", first.name, second.name, "")
