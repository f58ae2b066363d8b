"""The golden file ``python -m engine qa --write-golden PATH`` writes, read back without the engine.

A user commits this file and later runs ``qa --golden PATH`` against it, so every field is read:
the prompt (documented: ``def fibonacci(n):`` and a newline), the 16 tokens asked for, the new ids
as greedy decoding written out here gives them for the checkpoint's model (stopping at an EOS), and
their text as the ``tokenizers`` library decodes them, in UTF-8 JSON indented by two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from engine.checkpoint import make_manifest, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.realistic_models import realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPT, TOKENS = "def fibonacci(n):\n", 16


@checker(
    observes=["exit_code", "announced", "fields_differing", "canonical", "golden_gate_passes"],
    ids=["FALSIFY-QAG-005"],
)
def golden_file_holds_the_greedy_output(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, stop_step: int = 9
) -> dict[str, Any]:
    """``qa CKPT --write-golden PATH`` on a checkpoint whose EOS ids include the token greedy
    decoding gives at ``stop_step``, then ``qa CKPT --golden PATH --json`` against the file."""

    work = fresh_dir(tmp_path, "golden-file-")
    model = realistic_model(tiny_model_factory, 0, "llama").eval()
    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    prompt = ([engine_tokenizer.bos_id] if engine_tokenizer.add_bos_token else []) + backend.encode(
        PROMPT, add_special_tokens=False
    ).ids
    stop = _greedy(model, prompt, TOKENS, set())[stop_step - 1]
    model.config = model.config.replace(eos_token_id=(engine_tokenizer.eos_id, stop))
    new = _greedy(model, prompt, TOKENS, {engine_tokenizer.eos_id, stop})
    checkpoint = save_checkpoint(work / "model.safetensors", model, engine_tokenizer, make_manifest(step=0))
    path = work / "golden.json"
    cli = cli_runner()
    result = cli("qa", checkpoint, "--write-golden", path)
    out: dict[str, Any] = {"exit_code": result.exit_code, "announced": False, "fields_differing": -1}
    out |= {"canonical": False, "golden_gate_passes": False}
    if result.exit_code != 0 or not path.is_file():
        return out
    out["announced"] = f"wrote golden output of {checkpoint} to {path}" in " ".join(result.stderr.split())
    raw = path.read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    want = {
        "prompt": PROMPT,
        "max_new_tokens": TOKENS,
        "new_ids": new,
        "text": backend.decode(new, skip_special_tokens=False),
    }
    out["fields_differing"] = sum(doc.get(k) != v for k, v in want.items()) + len(set(doc) - set(want))
    out["canonical"] = raw == (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    report = cli("qa", checkpoint, "--golden", path, "--json")
    gates = {g["name"]: g for g in json.loads(report.stdout)["gates"]} if report.stdout.strip() else {}
    out["golden_gate_passes"] = gates.get("golden", {}).get("status") == "pass"
    return out
