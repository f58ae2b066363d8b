"""``inspect`` without ``--json`` prints tables a person reads: every figure of the JSON report,
and names shown as written.

Other falsifiers read ``inspect --json``.  The tables are what a user sees by default, rendered by
rich, whose markup would read ``[v1]`` in a file name or ``[INST]`` in a path as a style tag and
drop it.  Here a checkpoint named ``run[v1].safetensors`` and an adapter saved under
``adapter[a]`` are inspected both ways; the table output, with whitespace and the tables' box
characters taken out (rich wraps cells to the terminal's width), must hold each name as written
and each field of the JSON report beside its label, with no (empty) header row above the fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.lora import LoraSettings, apply_lora, save_adapter
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

_LAYOUT = re.compile(r"[\s\u2500-\u257f]+")  # whitespace and box-drawing characters


def _squash(text: str) -> str:
    return _LAYOUT.sub("", text)


def _first_row_under_border(text: str) -> bool:
    """The line under the table's top border holds a field: no (empty) header row above the fields."""
    lines = text.splitlines()
    top = next((i for i, line in enumerate(lines) if line.lstrip()[:1] in ("\u250c", "\u250f")), None)
    return top is not None and top + 1 < len(lines) and _squash(lines[top + 1]) != ""


@checker(observes=["checkpoint_missing", "adapter_missing", "exit_codes", "no_header_rows"], ids=["FALSIFY-IO-019"])
def inspect_tables_show_the_report(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """inspect and inspect --json on a checkpoint and on an adapter folder whose names hold brackets."""

    run = cli_runner()
    work = fresh_dir(tmp_path, "inspect-tables-")
    model = tiny_model_factory(0, vocab_size=engine_tokenizer.vocab_size)
    path = save_checkpoint(work / "run[v1].safetensors", model, engine_tokenizer, make_manifest(step=3, seed=1))
    table, report = run("inspect", path), run("inspect", path, "--json")
    shown = _squash(table.stdout)
    doc = json.loads(report.stdout)
    tok = doc["tokenizer"]
    specials = ", ".join(f"{role}={s['token']}({s['id']})" for role, s in tok["special_tokens"].items())
    wanted = [
        path.name,
        *(f"{key}{value}" for key, value in doc["architecture"].items()),
        f"parameters{doc['parameters']:,}",
        f"tensors/dtype{doc['tensors']}/{doc['dtype']}",
        f"filesize{doc['file_bytes']:,}bytes",
        f"tokenizer:{tok['type']},{tok['vocab_size']}tokens,{tok['merges']}merges;{specials}",
        f"manifest:{json.dumps(doc['manifest'], sort_keys=True, default=str)}",
    ]
    checkpoint_missing = [w for w in wanted if _squash(w) not in shown]

    peft = apply_lora(tiny_model_factory(0), LoraSettings(r=4, alpha=8.0, targets=("q_proj", "v_proj")))
    folder = save_adapter(peft, work / "adapter[a]")
    adapter_table, adapter_report = run("inspect", folder), run("inspect", folder, "--json")
    info = json.loads(adapter_report.stdout)
    keys = ("method", "base", "step", "r", "lora_alpha", "lora_dropout", "target_modules", "parameters")
    rows = [f"{k}{', '.join(info[k]) if isinstance(info[k], list) else info[k]}" for k in keys]
    adapter_wanted = [f"adapter {info['path']}", *rows, f"sha256{info['sha256']}"]
    adapter_shown = _squash(adapter_table.stdout)
    return {
        "checkpoint_missing": checkpoint_missing,
        "adapter_missing": [w for w in adapter_wanted if _squash(w) not in adapter_shown],
        "exit_codes": [table.exit_code, report.exit_code, adapter_table.exit_code, adapter_report.exit_code],
        "no_header_rows": [
            _first_row_under_border(table.stdout),
            _first_row_under_border(adapter_table.stdout),
        ],
    }
