"""The mutation report keeps the mutation-testing-elements report schema (version 2) that mutation
dashboards read: checked against the schema's required structure, written out here."""

from __future__ import annotations

from pathlib import Path

import jsonschema

from pv.review.mte import report
from tests.pv.review.helpers import review, row

STATUSES = ("Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout", "Ignored", "Pending")
POSITION = {
    "type": "object",
    "required": ["line", "column"],
    "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}},
}
MUTANT = {
    "type": "object",
    "required": ["id", "mutatorName", "location", "status"],
    "properties": {
        "id": {"type": "string"},
        "mutatorName": {"type": "string"},
        "replacement": {"type": "string"},
        "description": {"type": "string"},
        "statusReason": {"type": "string"},
        "coveredBy": {"type": "array", "items": {"type": "string"}},
        "killedBy": {"type": "array", "items": {"type": "string"}},
        "location": {
            "type": "object",
            "required": ["start", "end"],
            "properties": {"start": POSITION, "end": POSITION},
        },
        "status": {"enum": [*STATUSES]},
    },
}
REPORT = {
    "type": "object",
    "required": ["schemaVersion", "thresholds", "files"],
    "properties": {
        "schemaVersion": {"type": "string", "pattern": "^2"},
        "thresholds": {
            "type": "object",
            "required": ["high", "low"],
            "properties": {"high": {"type": "integer"}, "low": {"type": "integer"}},
        },
        "files": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["language", "source", "mutants"],
                "properties": {"mutants": {"type": "array", "items": MUTANT, "uniqueItems": True}},
            },
        },
        "testFiles": {
            "type": "object",
            "additionalProperties": {"type": "object", "required": ["tests"]},
        },
    },
}


def test_each_named_mutant_is_one_mutant_on_its_line(tmp_path: Path) -> None:
    contract = tmp_path / "contracts" / "demo-v1.yaml"
    contract.parent.mkdir()
    contract.write_text("a: 1\n" * 12)
    rows = [
        row("FALSIFY-DEMO-001", mutant="engine.faults:off_by_one", mutant_line=9),
        row("FALSIFY-DEMO-002", head_mutant=False, mutant="engine.faults:ignored", mutant_line=12),
        row("FALSIFY-DEMO-003", head_mutant=None, mutant="engine.faults:late"),
        row("FALSIFY-DEMO-004"),  # names no mutant: not one
    ]
    out = report(review(rows), tmp_path)
    jsonschema.validate(out, REPORT)
    (file,) = out["files"].values()
    assert file["source"] == contract.read_text() and file["language"] == "yaml"
    found = {m["id"]: (m["status"], m["location"]["start"]["line"], m.get("killedBy")) for m in file["mutants"]}
    assert found == {
        "demo-v1/FALSIFY-DEMO-001": ("Killed", 9, ["FALSIFY-DEMO-001"]),
        "demo-v1/FALSIFY-DEMO-002": ("Survived", 12, None),
        "demo-v1/FALSIFY-DEMO-003": ("Pending", 7, None),  # no `mutant:` line found: on its `id:` line
    }
    assert [t["id"] for t in out["testFiles"]["contracts/demo-v1.yaml"]["tests"]][:2] == [
        "FALSIFY-DEMO-001",
        "FALSIFY-DEMO-002",
    ]
