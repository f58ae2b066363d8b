"""The in-toto statement is a format a verifier outside pv reads: Statement v1 with the contract
(its file's sha256, its binding digest and method as annotations) and every artifact, in the
bundle's order, as subjects, and the bundle whole as the predicate. Spelled out here, key by key."""

from __future__ import annotations

from typing import Any

from pv.bundle import intoto
from pv.bundle.model import Bundle

A, B, C, D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def _artifact(path: str, sha256: str, kind: str) -> dict[str, Any]:
    return {"path": path, "sha256": sha256, "size": 1, "kind": kind, "falsifier": "F-1", "source": path}


def _bundle() -> Bundle:
    env = {"python": "3.11", "implementation": "CPython", "packages": {}, "os": "Linux", "machine": "x86_64"}
    summary = dict.fromkeys(
        ("declared", "selected", "survived", "falsified", "error", "skipped", "not_run", "mutants_killed"), 0
    )
    data: dict[str, Any] = {
        "run_id": "20261203T190000000000Z-0123abcd",
        "session_id": "s",
        "started_at": "2026-12-03T19:00:00Z",
        "finished_at": "2026-12-03T19:00:01Z",
        "contract": {
            "id": "demo-v1",
            "path": "contracts/demo-v1.yaml",
            "version": "1.0.0",
            "status": "DRAFT",
            "sha256": A,
            "binding_digest": B,
        },
        "environment": {**env, "cpu_model": "cpu", "gpu": "none"},
        "falsifiers": [],
        "summary": {**summary, "mutants_survived": 0},
        "artifacts": [
            _artifact("artifacts/logs/F-1/z.log", C, "log"),
            _artifact("artifacts/plots/F-1/a.png", D, "plot"),
        ],
    }
    return Bundle.model_validate(data)


def test_the_subjects_are_the_contract_then_each_artifact_in_the_bundle_s_order() -> None:
    assert intoto.subjects(_bundle()) == [
        {
            "name": "contract:contracts/demo-v1.yaml",
            "digest": {"sha256": A},
            "annotations": {"binding_digest": B, "binding_method": "pv-canonical-v2"},
        },
        {"name": "artifacts/logs/F-1/z.log", "digest": {"sha256": C}},
        {"name": "artifacts/plots/F-1/a.png", "digest": {"sha256": D}},
    ]


def test_the_statement_is_in_toto_v1_with_the_bundle_as_predicate() -> None:
    bundle = _bundle()
    statement = intoto.statement(bundle)
    assert list(statement) == ["_type", "subject", "predicateType", "predicate"]
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://pv.dev/evidence/bundle/v1"
    assert statement["subject"] == intoto.subjects(bundle)
    assert statement["predicate"] == bundle.model_dump(mode="json")
    assert statement["predicate"]["contract"]["binding_method"] == "pv-canonical-v2"  # JSON, defaults written
