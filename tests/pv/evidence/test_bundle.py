"""Bundle content: every declared falsifier with an explicit verdict, artifacts, statement."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pv.bundle.digest import contract_binding_digest, dumps, sha256_file
from pv.bundle.model import PREDICATE_TYPE, STATEMENT_TYPE, committed_schema, json_schema
from pv.evidence.writer import make_run_id, write_run
from pv.results import Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, Writer, record, result


def load(bundle: Path, name: str = "bundle.json") -> dict:
    return json.loads((bundle / name).read_text())


def test_committed_schema_is_the_models_schema() -> None:
    assert committed_schema() == json_schema(), "regenerate: python -m pv.bundle.model > pv/schema/bundle.schema.json"


@pytest.mark.parametrize(
    ("verdict", "kw", "expected"),
    [
        (Verdict.SURVIVED, {}, {"verdict": "survived", "skip_kind": None}),
        (
            Verdict.FALSIFIED,
            {"observations": {"step0_loss": 7.5}},
            {"verdict": "falsified", "observations": {"step0_loss": 7.5}},
        ),
        (
            Verdict.ERROR,
            {"mutant": None},
            {
                "verdict": "error",
                "mutant": {
                    "declared": "engine.faults:demo_fault",
                    "verdict": None,
                    "killed": None,
                    "observations": {},
                    "message": "",
                },
            },
        ),
        (
            Verdict.SKIPPED,
            {"skip_reason": "no CUDA", "skip_kind": "hardware", "mutant": None},
            {"verdict": "skipped", "skip_reason": "no CUDA", "skip_kind": "hardware"},
        ),
        (  # the kind is what the harness decided, never guessed from the reason's words
            Verdict.SKIPPED,
            {"skip_reason": "no CUDA", "mutant": None},
            {"verdict": "skipped", "skip_reason": "no CUDA", "skip_kind": "other"},
        ),
        (
            Verdict.SKIPPED,
            {"skip_reason": "missing package peft", "mutant": None},
            {"verdict": "skipped", "skip_kind": "other"},
        ),
        (Verdict.NOT_RUN, {"mutant": None}, {"verdict": "not_run", "selected": False}),
    ],
)
def test_each_verdict_kind_is_recorded(write: Writer, verdict: Verdict, kw: dict, expected: dict) -> None:
    bundle = load(write([result("FALSIFY-DEMO-001", verdict, **kw), result("FALSIFY-DEMO-003", Verdict.SURVIVED)]))
    entry = next(f for f in bundle["falsifiers"] if f["id"] == "FALSIFY-DEMO-001")
    for key, value in expected.items():
        assert entry[key] == value, key
    assert bundle["summary"]["declared"] == 3
    assert sum(bundle["summary"][k] for k in ("survived", "falsified", "error", "skipped", "not_run")) == 3


def test_every_declared_falsifier_appears_with_a_verdict(write: Writer) -> None:
    bundle = load(write([result("FALSIFY-DEMO-001", Verdict.SURVIVED)]))
    assert [f["id"] for f in bundle["falsifiers"]] == IDS
    unselected = bundle["falsifiers"][1]
    assert unselected["verdict"] == "not_run" and unselected["selected"] is False
    assert unselected["expect"] == "step0_loss <= 3.0"  # taken from the contract
    assert unselected["requires"] == ["cuda"]
    assert unselected["mutant"]["declared"] == "engine.faults:demo_fault"
    assert bundle["falsifiers"][2]["ship_blocking"] is False
    assert bundle["summary"]["selected"] == 1 and bundle["summary"]["not_run"] == 2


def test_contract_binding_and_run_metadata(project: Project, write: Writer) -> None:
    path = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    bundle = load(path)
    contract = bundle["contract"]
    assert contract["id"] == "demo-v1" and contract["path"] == "contracts/demo-v1.yaml"
    assert contract["sha256"] == sha256_file(project.contract)
    assert contract["binding_digest"] == contract_binding_digest(project.contract.read_bytes())
    assert bundle["run_id"] == path.name and path.parent == project.evidence / "demo-v1"
    assert bundle["run_id"].startswith("20260301T100000000001Z-")
    assert bundle["schema_version"] == 1 and bundle["mutants_enabled"] is True
    assert bundle["environment"]["gpu"] == "none"
    jsonschema.validate(bundle, committed_schema())


def test_json_is_sorted_with_trailing_newline(write: Writer) -> None:
    path = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    for name in ("bundle.json", "statement.intoto.json"):
        text = (path / name).read_text()
        assert text.endswith("}\n") and text == dumps(json.loads(text))


def test_non_finite_observations_stay_valid_json(write: Writer) -> None:
    obs = {"step0_loss": float("nan"), "grad": float("inf"), "per_layer": (1.0, float("-inf"))}
    bundle = load(write([result("FALSIFY-DEMO-001", Verdict.FALSIFIED, observations=obs)]))
    assert bundle["falsifiers"][0]["observations"] == {"step0_loss": "nan", "grad": "inf", "per_layer": [1.0, "-inf"]}


def test_artifacts_are_copied_digested_and_sorted_into_logs_and_plots(
    project: Project, write: Writer, tmp_path: Path
) -> None:
    produced = tmp_path / "work"
    (produced / "ckpt").mkdir(parents=True)
    (produced / "train.log").write_text("step 0 loss 2.1\n")
    (produced / "loss.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    (produced / "ckpt" / "model.safetensors").write_bytes(b"\0" * 100)
    arts = [str(produced / "train.log"), str(produced / "loss.png"), str(produced / "ckpt")]
    path = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=arts)])
    bundle = load(path)
    by_path = {a["path"]: a for a in bundle["artifacts"]}
    assert set(by_path) == {
        "artifacts/logs/FALSIFY-DEMO-001/train.log",
        "artifacts/plots/FALSIFY-DEMO-001/loss.png",
        "artifacts/files/FALSIFY-DEMO-001/ckpt/model.safetensors",
    }
    for rel, entry in by_path.items():
        assert sha256_file(path / rel) == entry["sha256"] and entry["size"] == (path / rel).stat().st_size
    assert set(bundle["falsifiers"][0]["artifacts"]) == set(by_path)

    statement = load(path, "statement.intoto.json")
    assert statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == PREDICATE_TYPE
    assert statement["predicate"] == bundle
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects.pop("contract:contracts/demo-v1.yaml") == sha256_file(project.contract)
    assert subjects == {rel: e["sha256"] for rel, e in by_path.items()}

    manifest = (path / "MANIFEST.sha256").read_text().splitlines()
    listed = {line.split("  ", 1)[1] for line in manifest}
    assert listed == {*by_path, "bundle.json", "statement.intoto.json"}


def test_missing_artifact_is_noted_not_dropped_silently(write: Writer, tmp_path: Path) -> None:
    bundle = load(write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(tmp_path / "gone.log")])]))
    assert "gone.log" in bundle["falsifiers"][0]["message"] and bundle["artifacts"] == []


def test_contract_with_nothing_run_gets_no_bundle(project: Project) -> None:
    outcomes = write_run(
        record(project, [result("FALSIFY-DEMO-001", Verdict.NOT_RUN)]), project.evidence, project.root, ENV
    )
    assert outcomes == [] and not project.evidence.exists()


def test_contract_edited_during_the_run_is_refused(project: Project) -> None:
    rec = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)])
    project.contract.write_text(project.contract.read_text().replace("<= 3.0", "<= 30.0"))
    [outcome] = write_run(rec, project.evidence, project.root, ENV)
    assert outcome.path is None and "changed during the run" in outcome.reason


def test_duplicate_results_are_refused(project: Project) -> None:
    rec = record(project, [result("FALSIFY-DEMO-001", Verdict.SURVIVED), result("FALSIFY-DEMO-001", Verdict.FALSIFIED)])
    [outcome] = write_run(rec, project.evidence, project.root, ENV)
    assert outcome.path is None and "reported twice" in outcome.reason
    assert not any(project.evidence.rglob("bundle.json"))


def test_run_ids_sort_by_time_and_stay_unique() -> None:
    a = make_run_id("2026-03-01T10:00:00+00:00", "x")
    b = make_run_id("2026-03-01T10:00:00+00:00", "x")
    c = make_run_id("2026-03-01T11:00:00+01:00", "x")  # the same instant, another zone
    assert a != b and a[:22] == b[:22] == c[:22] == "20260301T100000000000Z"
    assert make_run_id("2026-03-02T00:00:00Z", "x") > a


def test_skip_kinds_come_from_the_requirement_kind() -> None:
    from pv.requirements import Machine, unmet_hardware

    none = Machine()
    assert unmet_hardware(["cuda"], none) == (["no CUDA"], True)
    assert unmet_hardware(["cuda_mem_gib>=40", "gpus>=2"], none) == (["no CUDA", "no CUDA"], True)
    assert unmet_hardware(["package:surely_not_installed_pkg"], none) == (
        ["missing package surely_not_installed_pkg"],
        False,
    )
    assert unmet_hardware(["cuda", "package:surely_not_installed_pkg"], none)[1] is False  # mixed: other
    assert unmet_hardware(["cpu"], none) == ([], False)
