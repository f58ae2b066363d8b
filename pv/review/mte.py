"""The contracts' mutants in the mutation-testing-elements report schema (version 2), which mutation
dashboards read (Stryker's HTML elements, the Stryker dashboard).

Each contract file is a "file" whose source is the YAML; each falsifier that names a mutant is one
mutant there, located on its ``mutant:`` line, ``Killed`` when the head's run caught it (its
falsifier failed with the fault switched on), ``Survived`` when it did not, ``Pending`` when the
head has no decided mutant run.  The falsifier is the test that covers and kills it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pv.review.compare import Review

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 100, "low": 90}  # a ship-blocking claim whose mutant survives is vacuous


def _status(caught: bool | None) -> str:
    return "Pending" if caught is None else ("Killed" if caught else "Survived")


def report(review: Review, root: Path | None = None) -> dict[str, Any]:
    files: dict[str, Any] = {}
    tests: dict[str, Any] = {}
    for c in review.contracts:
        rows = [r for r in review.rows if r.contract_id == c.id]
        try:
            source = ((root or Path.cwd()) / c.path).read_text(encoding="utf-8")
        except OSError:
            source = ""
        lines = source.splitlines()
        mutants = []
        for r in rows:
            if not r.mutant:
                continue
            line = r.mutant_line or r.line or 1
            width = len(lines[line - 1]) if 0 < line <= len(lines) else 1
            module, _, fault = r.mutant.partition(":")
            mutant: dict[str, Any] = {
                "id": f"{c.id}/{r.falsifier_id}",
                "mutatorName": fault or r.mutant,
                "description": f"{r.mutant} switched on under {r.falsifier_id}",
                "replacement": r.mutant,
                "location": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": width + 1}},
                "status": _status(r.head_mutant),
                "coveredBy": [r.falsifier_id],
            }
            if r.head_mutant:
                mutant["killedBy"] = [r.falsifier_id]
            if module:
                mutant["statusReason"] = f"fault {fault} of {module}; falsifier verdict {r.head_verdict or 'not run'}"
            mutants.append(mutant)
        files[c.path] = {"language": "yaml", "source": source, "mutants": mutants}
        tests[c.path] = {"tests": [{"id": r.falsifier_id, "name": r.falsifier_id} for r in rows]}
    return {
        "$schema": "https://git.io/mutation-testing-schema",
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": THRESHOLDS,
        "files": files,
        "testFiles": tests,
        "framework": {"name": "pv"},
    }
