"""pv status, pv coverage and pv graph over fixture trees with evidence written by the evidence writer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pv.results import Verdict

from .cli_trees import FIXTURES, Invoke, Result, write_bundle

CUDA_SKIP = "requires cuda: no CUDA device"


def alpha_run(root: Path, started: str = "2026-03-01T10:00:00.000001+00:00") -> Path:
    return write_bundle(
        root,
        "alpha-v1",
        [
            Result("FALSIFY-ALPHA-001", Verdict.SURVIVED),
            Result("FALSIFY-ALPHA-002", Verdict.SKIPPED, skip_reason=CUDA_SKIP, killed=None, skip_kind="hardware"),
            Result("FALSIFY-ALPHA-003", Verdict.SURVIVED, ship_blocking=False, killed=None),
        ],
        started,
    )


def line_of(out: str, cid: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(cid + " "))


# --- status --------------------------------------------------------------------------------------


def test_status_without_evidence(cli: Invoke, tree: Path) -> None:
    code, out = cli("status", cwd=tree)
    assert code == 0
    assert line_of(out, "alpha-v1") == (
        "alpha-v1  DRAFT  1.0.0  3 falsifiers (2 ship-blocking, 1 advisory), 0 survived, 0 stale, 0 skipped, "
        "3 never run"
    )
    assert "beta-v1   DRAFT  2.1.0  1 falsifier (1 ship-blocking, 0 advisory)" in out
    assert out.splitlines()[-1] == (
        "2 contracts, 4 falsifiers: 0 survived, 0 falsified, 0 error, 0 inconclusive, 0 skipped, 0 stale, 4 never run"
    )


def test_status_reads_the_newest_verified_bundle(cli: Invoke, tree: Path) -> None:
    alpha_run(tree)
    code, out = cli("status", cwd=tree)
    assert code == 0
    assert line_of(out, "alpha-v1") == (
        "alpha-v1  DRAFT  1.0.0  3 falsifiers (2 ship-blocking, 1 advisory), 2 survived, 0 stale, "
        f"1 skipped ({CUDA_SKIP}), 0 never run  [evidence supports ACTIVE_ALGORITHM_LEVEL: run pv promote]"
    )

    write_bundle(tree, "alpha-v1", [Result("FALSIFY-ALPHA-001", Verdict.FALSIFIED)], "2026-03-02T10:00:00.000001+00:00")
    code, out = cli("status", "alpha-v1", cwd=tree)
    # the newest bundle ran one falsifier; the others keep their verdicts from the older current run
    assert "2 falsifiers" not in out and "1 survived, 1 falsified, 0 stale, 1 skipped" in line_of(out, "alpha-v1")
    assert "beta-v1" not in out


def test_an_edited_contract_makes_its_evidence_stale(cli: Invoke, tree: Path) -> None:
    alpha_run(tree)
    path = tree / "contracts" / "alpha-v1.yaml"
    path.write_text(path.read_text().replace("max_diff == 0", "max_diff <= 1"))
    code, out = cli("status", "alpha-v1", cwd=tree)
    assert code == 0
    assert "0 survived, 3 stale, 0 skipped, 0 never run" in line_of(out, "alpha-v1")

    # a new run of one falsifier: it is current, the other two stay stale (measured against the old claim)
    write_bundle(
        tree,
        "alpha-v1",
        [Result("FALSIFY-ALPHA-003", Verdict.SURVIVED, ship_blocking=False)],
        "2026-03-02T10:00:00.000001+00:00",
    )
    code, out = cli("status", "--json", "alpha-v1", cwd=tree)
    (view,) = json.loads(out)["contracts"]
    states = {f["id"]: f["state"] for f in view["falsifier_states"]}
    assert states == {"FALSIFY-ALPHA-001": "stale", "FALSIFY-ALPHA-002": "stale", "FALSIFY-ALPHA-003": "survived"}


def test_an_unbacked_status_and_an_invalid_file_exit_1(cli: Invoke, tree: Path) -> None:
    beta = tree / "contracts" / "beta-v1.yaml"
    beta.write_text(beta.read_text().replace("  kind: inference\n", "  kind: inference\n  status: ACTIVE\n"))
    code, out = cli("status", cwd=tree)
    assert code == 1 and "[UNBACKED: evidence supports DRAFT]" in line_of(out, "beta-v1")
    assert "1 with an unbacked status" in out

    beta.write_text(beta.read_text().replace("status: ACTIVE", "status: DRAFT"))
    (tree / "contracts" / "broken.yaml").write_text("metadata: {id: broken, version: 1.0.0}\n")
    code, out = cli("status", cwd=tree)
    assert code == 1
    assert line_of(out, "broken").startswith("broken    INVALID  -      contracts/broken.yaml:1:")
    assert "description" in line_of(out, "broken") and "1 invalid" in out


def test_status_json(cli: Invoke, tree: Path) -> None:
    bundle = alpha_run(tree)
    code, out = cli("status", "--json", cwd=tree)
    assert code == 0
    data = json.loads(out)
    alpha = next(c for c in data["contracts"] if c["id"] == "alpha-v1")
    assert alpha["status"] == "DRAFT" and alpha["evidence_status"] == "ACTIVE_ALGORITHM_LEVEL"
    assert alpha["bundle"] == bundle.relative_to(tree).as_posix() and alpha["unbacked"] is False
    assert alpha["falsifiers"] == {
        "total": 3,
        "ship_blocking": 2,
        "advisory": 1,
        "survived": 2,
        "falsified": 0,
        "error": 0,
        "inconclusive": 0,
        "skipped": 1,
        "stale": 0,
        "never_run": 0,
        "skip_reasons": {CUDA_SKIP: 1},
    }
    assert data["ok"] is True


def test_status_selection_and_its_errors(cli: Invoke, tree: Path) -> None:
    code, out = cli("status", "contracts/beta-v1.yaml", cwd=tree)
    assert code == 0 and "beta-v1" in out and "alpha-v1" not in out
    code, out = cli("status", "gamma-v1", cwd=tree)
    assert code == 2 and "gamma-v1: no such file, and no contract with that id" in out
    code, out = cli("status", "pyproject.toml", cwd=tree)
    assert code == 2 and "pyproject.toml is not a contract file" in out
    (tree / "empty").mkdir()
    code, out = cli("status", "empty", cwd=tree)
    assert code == 2 and "no contract files (*.yaml, *.yml) under empty" in out
    shutil.rmtree(tree / "contracts")
    code, out = cli("status", cwd=tree)
    assert code == 2 and "does not exist" in out


def test_status_follows_the_configuration(cli: Invoke, tree: Path) -> None:
    (tree / "contracts").rename(tree / "claims")
    (tree / "pyproject.toml").write_text('[tool.pv]\ncontracts = "claims"\nevidence = "runs"\n')
    code, out = cli("status", cwd=tree)
    assert code == 0 and "alpha-v1" in out and "beta-v1" in out
    (tree / "pyproject.toml").write_text('[tool.pv]\ncontract = "claims"\n')
    code, out = cli("status", cwd=tree)
    assert code == 2 and "configuration error" in out


# --- coverage ------------------------------------------------------------------------------------


def test_coverage_json(cli: Invoke, tree: Path) -> None:
    alpha_run(tree)
    code, out = cli("coverage", "--json", cwd=tree)
    assert code == 0
    data = json.loads(out)
    alpha, beta = data["contracts"]
    assert alpha["obligations"] == {"total": 3, "covered": 2, "uncovered": ["ALPHA-INV-003"], "percent": 66.7}
    assert alpha["falsifiers"] == {
        "total": 3,
        "survived": 2,
        "survived_percent": 66.7,
        "with_mutant": 2,
        "with_mutant_percent": 66.7,
        "mutant_killed": 1,
    }
    assert beta["falsifiers"]["survived"] == 0 and beta["falsifiers"]["with_mutant"] == 1
    total = data["total"]
    assert total["obligations"]["covered"] == 3 and total["obligations"]["total"] == 4
    assert total["obligations"]["uncovered"] == ["alpha-v1:ALPHA-INV-003"]
    assert (total["falsifiers"]["total"], total["falsifiers"]["survived"], total["falsifiers"]["with_mutant"]) == (
        4,
        2,
        3,
    )


def test_coverage_table(cli: Invoke, tree: Path) -> None:
    alpha_run(tree)
    code, out = cli("coverage", cwd=tree)
    assert code == 0
    alpha = next(line for line in out.splitlines() if "alpha-v1" in line)
    assert [c.strip() for c in alpha.strip("│┃ ").split("│")] == [
        "alpha-v1",
        "2/3 (66.7%)",
        "2/3 (66.7%)",
        "2/3 (66.7%)",
        "1/2 (50%)",
    ]
    total = next(line for line in out.splitlines() if "total" in line)
    assert "3/4 (75%)" in total and "2/4 (50%)" in total
    assert "uncovered obligations: alpha-v1:ALPHA-INV-003" in out


def test_coverage_of_an_invalid_contract_exits_1(cli: Invoke, tree: Path) -> None:
    (tree / "contracts" / "broken.yaml").write_text("- not a mapping\n")
    code, out = cli("coverage", cwd=tree)
    assert code == 1 and "INVALID" in out and "error: contracts/broken.yaml:1:1: PV005" in out
    code, out = cli("coverage", "nothing-v1", cwd=tree)
    assert code == 2


# --- graph ---------------------------------------------------------------------------------------


def test_graph_text_with_evidence_status(cli: Invoke, tree: Path) -> None:
    alpha_run(tree)
    code, out = cli("graph", cwd=tree)
    assert code == 0
    assert out.splitlines() == [
        "alpha-v1 [DRAFT, evidence ACTIVE_ALGORITHM_LEVEL] -> beta-v1",
        "beta-v1 [DRAFT]",
        "2 contracts, 1 dependencies, 0 cycles, 0 missing dependencies",
    ]


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (
            "dot",
            ['  "alpha-v1" -> "beta-v1";', '  "beta-v1" [label="beta-v1\\nDRAFT (evidence DRAFT)", fillcolor=white];'],
        ),
        ("mermaid", ["flowchart LR", '  n0["alpha-v1<br/>DRAFT (evidence DRAFT)"]', "  n0 --> n1"]),
    ],
)
def test_graph_formats(cli: Invoke, tree: Path, fmt: str, expected: list[str]) -> None:
    code, out = cli("graph", "--format", fmt, cwd=tree)
    assert code == 0
    for line in expected:
        assert line in out.splitlines()


def test_graph_reports_cycles_and_missing_dependencies(cli: Invoke, tmp_path: Path) -> None:
    root = tmp_path / "cycle"
    shutil.copytree(FIXTURES / "cycle", root)
    code, out = cli("graph", cwd=root)
    assert code == 1
    assert "a-v1 [DRAFT] -> b-v1  (in a cycle)" in out
    assert "c-v1 [DRAFT] -> ghost-v1 (missing)" in out
    assert "contracts/a-v1.yaml:6:16: PV126 depends_on forms a cycle: a-v1 -> b-v1 -> a-v1" in out
    assert "contracts/c-v1.yaml:6:16: PV125 depends_on names `ghost-v1`, which is not a contract" in out

    code, out = cli("graph", "--format", "json", cwd=root, stdout_only=True)
    assert code == 1
    data = json.loads(out)
    assert data["cycles"] == [["a-v1", "b-v1"]] and data["missing"] == [["c-v1", "ghost-v1"]]
    assert data["ok"] is False and {d["code"] for d in data["diagnostics"]} == {"PV125", "PV126"}

    code, out = cli("graph", "--format", "dot", cwd=root)
    assert code == 1 and '  "a-v1" -> "b-v1" [color=red];' in out and "[style=dashed]" in out
    code, out = cli("graph", "--format", "mermaid", cwd=root)
    assert code == 1 and "  linkStyle 0,1 stroke:red" in out


def test_graph_self_dependency_is_a_cycle(cli: Invoke, tree: Path) -> None:
    beta = tree / "contracts" / "beta-v1.yaml"
    beta.write_text(beta.read_text().replace("  kind: inference\n", "  kind: inference\n  depends_on: [beta-v1]\n"))
    code, out = cli("graph", "--format", "json", cwd=tree, stdout_only=True)
    assert code == 1 and json.loads(out)["cycles"] == [["beta-v1"]]


def test_graph_usage_errors(cli: Invoke, tree: Path) -> None:
    code, out = cli("graph", "--format", "svg", cwd=tree)
    assert code == 2
    shutil.rmtree(tree / "contracts")
    code, out = cli("graph", cwd=tree)
    assert code == 2 and "does not exist" in out


# --- help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["scaffold", "status", "diff", "graph", "coverage"])
def test_help_has_an_example(cli: Invoke, tmp_path: Path, command: str) -> None:
    code, out = cli(command, "--help", cwd=tmp_path)
    assert code == 0 and "Example" in out and f"pv {command}" in out
