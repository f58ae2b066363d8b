"""``finetune --adapters`` with the options FALSIFY-MULTI-005 leaves at values that hide them: a base
whose tokenizer has a chat template (so the default template, auto, means chat, not the
docstring template every other default gives), QLoRA with the default double quantization, and a
seed other than the default 0.

Each adapter's run folder is compared with the one-adapter run of its data and the same options,
file by file, as FALSIFY-MULTI-005 compares them (``falsifiers.multi_adapter.multi_runs._differences``), and the
step manifests must name the template and double quantization the options resolve to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.multi_adapter.multi_runs import _differences
from falsifiers.shared.chat_templates import TEMPLATE
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import _rows
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SETTINGS = (
    "--steps", "2", "--save-every", "2", "--eval-every", "2", "--lr", "1e-2", "--rank", "4",
    "--batch-size", "2", "--seq-len", "48", "--warmup", "1", "--method", "qlora", "--seed", "5",
)  # fmt: skip


@checker(
    observes=["runs", "adapters_compared", "differing", "manifests_read", "manifests_wrong"],
    ids=["FALSIFY-MULTI-006"],
)
def adapters_with_chat_template_and_double_quant(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """The session's init saved again with a chat template; two QLoRA adapters trained together and
    each alone with every option at its default."""

    work = fresh_dir(tmp_path, "multi-options-")
    loaded = load_checkpoint(pretrained_init)
    tokenizer = EngineTokenizer.from_json(loaded.tokenizer.to_json())
    tokenizer.chat_template = TEMPLATE
    base = save_checkpoint(work / "chat-base.safetensors", loaded.model, tokenizer, make_manifest(step=0))
    run = cli_runner()
    data: dict[str, Path] = {}
    for name, shift in (("a", 0), ("b", 3)):
        data[name] = work / f"{name}.jsonl"
        data[name].write_text("".join(json.dumps(r) + "\n" for r in _rows(shift)), encoding="utf-8")
        single = run("finetune", base, work / "single" / name, "--data", data[name], *SETTINGS)
        if single.exit_code != 0:
            raise RuntimeError(f"finetune exited {single.exit_code}: {single.output}")
    specs = [a for name, path in data.items() for a in ("--adapters", f"{path}:{work / 'multi' / name}")]
    multi = run("finetune", base, *specs, *SETTINGS)
    out: dict[str, Any] = {"runs": 1, "adapters_compared": 0, "differences": [], "manifests_read": 0}
    out["manifests_wrong"] = 0
    if multi.exit_code != 0:
        out["differences"].append(f"exit {multi.exit_code}")
    else:
        for name in data:
            out["adapters_compared"] += 1
            out["differences"] += [f"{name}: {d}" for d in _differences(work / "multi" / name, work / "single" / name,
                                                                         name)]  # fmt: skip
            for manifest in sorted((work / "multi" / name).glob("step-*/manifest.json")):
                doc = json.loads(manifest.read_text())
                out["manifests_read"] += 1
                out["manifests_wrong"] += (
                    doc.get("template") != "chat" or doc.get("nf4", {}).get("double_quant") is not True
                )
    out["differing"] = len(out["differences"])
    return out
