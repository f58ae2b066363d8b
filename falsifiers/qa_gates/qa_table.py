"""What ``python -m engine qa`` prints without ``--json``: the gate table and the verdict line.

A user reads the table, not the JSON: each gate's row must say what the report says, its detail
whole (a long path folded over lines, never cut to an ellipsis), and the last line PASS or the
failing gates.  The reference is the same command's ``--json`` report; the table is read back from
its box-drawing characters, a row's cells joined over the lines it takes, and compared without
whitespace (folding breaks a cell anywhere).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.qa_gates.qa_gates import LOSSY_NORMALIZER
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.realistic_models import realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

VARYING = {"throughput"}  # its value and detail are a timing, measured afresh by each command


def _rows(table: str) -> tuple[list[list[str]], list[str]]:
    """(rows of the table as cells, every line after the table) of the command's output."""
    rows: list[list[str]] = []
    after: list[str] = []
    ended = False
    for line in table.splitlines():
        if ended:
            after.append(line)
        elif line.startswith("└"):
            ended = True
        elif line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if cells[0] or not rows:
                rows.append(cells)
            else:  # a row's continuation: the cells go on where they were folded or wrapped
                rows[-1] = [f"{a}\n{b}" if b else a for a, b in zip(rows[-1], cells, strict=True)]
    return rows, after


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _differing(report: dict[str, Any], output: str) -> list[list[Any]]:
    rows, after = _rows(output)
    out: list[list[Any]] = []
    gates = report.get("gates", [])
    if [r[0] for r in rows] != [g["name"] for g in gates]:
        out.append(["gates", [r[0] for r in rows]])
    for row, gate in zip(rows, gates, strict=False):
        value = "" if gate["value"] is None else f"{gate['value']:.4g}"
        bound = "" if gate["bound"] is None else f"{gate['bound']:.4g}"
        want = [gate["name"], gate["status"], value, bound, gate["detail"]]
        if gate["name"] in VARYING:
            want, row = want[:2] + want[3:4], row[:2] + row[3:4]
        if [_bare(c) for c in row] != [_bare(str(c)) for c in want]:
            out.append([gate["name"], row])
    failing = [g["name"] for g in gates if g["status"] == "fail"]
    verdict = "PASS" if report.get("passed") else "FAIL: " + ", ".join(failing)
    if [line for line in after if line.strip()][:1] != [verdict]:
        out.append(["verdict", after])
    return out


@checker(observes=["exits", "differing"], ids=["FALSIFY-QAG-013"])
def table_says_what_report_says(tmp_path: Path, engine_tokenizer: Any, tiny_model_factory: Any) -> dict[str, Any]:
    """qa with and without --json, at the default 80 columns, on a checkpoint that passes every
    gate, on one whose tokenizer folds case (the round trip fails), and on a missing file at a
    path longer than the table is wide."""

    work = fresh_dir(tmp_path, "qa-table-")
    model = realistic_model(tiny_model_factory, 0, "llama").eval()
    doc = json.loads(engine_tokenizer.to_json())
    doc["tokenizer"]["normalizer"] = LOSSY_NORMALIZER
    lossy = EngineTokenizer.from_json(json.dumps(doc))
    deep = work / ("a-folder-whose-name-is-longer-than-a-table-cell-" * 2) / "nested" / "model.safetensors"
    cases = {
        "passing": save_checkpoint(work / "plain.safetensors", model, engine_tokenizer, make_manifest(step=0)),
        "round trip failing": save_checkpoint(work / "lossy.safetensors", model, lossy, make_manifest(step=0)),
        "missing file": deep,
    }
    run = cli_runner()
    exits: list[list[Any]] = []
    differing: list[list[Any]] = []
    for name, path in cases.items():
        table = run("qa", path, "--min-tok-s", 1e-6)
        reported = run("qa", path, "--json", "--min-tok-s", 1e-6)
        exits.append([name, table.exit_code, reported.exit_code])
        try:
            report = json.loads(reported.stdout)
        except json.JSONDecodeError:
            differing.append([name, "no JSON report"])
            continue
        differing += [[name, *d] for d in _differing(report, table.stdout)]
    return {"exits": exits, "differing": differing}
