"""``qa --golden FILE`` with a file that is not a golden record: refused by name, never a traceback.

A golden record is a JSON object with a ``prompt`` string and a ``new_ids`` list of token ids (what
``qa --write-golden`` writes).  Files a user may hand over instead (not JSON, another JSON value, a
record missing a field or holding one of another type, ids that are not integers) must each end the
command with exit 2 and an ``error:`` naming the file and what a golden record needs, before any
gate runs; the record ``--write-golden`` wrote must be accepted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NEEDS = "needs a `prompt` string and a `new_ids` list"
NOT_IDS = "new_ids must be token ids"
# (file name, its text, what the error must say beside the file's path)
CASES: tuple[tuple[str, str, str | None], ...] = (
    ("truncated.json", '{"prompt": "def ", "new_ids": [1, 2', None),
    ("empty.json", "", None),
    ("list.json", "[1, 2, 3]", NEEDS),
    ("string.json", '"def main():"', NEEDS),
    ("no-prompt.json", '{"new_ids": [1, 2]}', NEEDS),
    ("prompt-number.json", '{"prompt": 3, "new_ids": [1, 2]}', NEEDS),
    ("no-ids.json", '{"prompt": "def "}', NEEDS),
    ("ids-string.json", '{"prompt": "def ", "new_ids": "1 2"}', NEEDS),
    ("ids-null.json", '{"prompt": "def ", "new_ids": null}', NEEDS),
    ("ids-text.json", '{"prompt": "def ", "new_ids": [1, "2"]}', NOT_IDS),
    ("ids-float.json", '{"prompt": "def ", "new_ids": [1, 2.5]}', NOT_IDS),
    ("ids-nested.json", '{"prompt": "def ", "new_ids": [[1, 2]]}', NOT_IDS),
)


def _golden_gate(stdout: str) -> str | None:
    """The status of the golden gate in a ``qa --json`` report."""
    try:
        report = json.loads(stdout)
    except ValueError:
        return None
    return next((g.get("status") for g in report.get("gates", []) if g.get("name") == "golden"), None)


@checker(observes=["cases", "refused_by_name", "unclean", "written_accepted"], ids=["FALSIFY-QAG-006"])
def malformed_golden_files_refused(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """Each malformed file through ``qa CHECKPOINT --golden FILE``; then the file ``--write-golden``
    wrote for the same checkpoint."""

    run = cli_runner()
    work = fresh_dir(tmp_path, "golden-refusals-")
    ckpt = save_checkpoint(work / "model.safetensors", tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    unclean: list[str] = []
    for name, text, needs in CASES:
        path = work / name
        path.write_text(text, encoding="utf-8")
        result = run("qa", ckpt, "--golden", path, "--json")
        # the path as the error prints it: rich may wrap a long line, so compare without whitespace
        output = "".join(str(result.output).split())
        named = str(path).replace(" ", "") in output and (needs is None or needs.replace(" ", "") in output)
        # refused before any gate ran: no report printed
        if not (refused_cleanly(result) and named and '"gates"' not in str(result.output)):
            unclean.append(f"{name}: exit {result.exit_code}")
    written = work / "golden.json"
    wrote = run("qa", ckpt, "--write-golden", written)
    record = json.loads(written.read_text(encoding="utf-8")) if wrote.exit_code == 0 else {}
    accepted = run("qa", ckpt, "--golden", written, "--json")
    return {
        "cases": len(CASES),
        "refused_by_name": len(CASES) - len(unclean),
        "unclean": unclean,
        "written_accepted": bool(record) and accepted.exit_code in (0, 1) and _golden_gate(accepted.stdout) == "pass",
    }
