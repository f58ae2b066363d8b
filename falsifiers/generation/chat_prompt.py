"""What ``generate --chat`` feeds the model: the conversation as transformers renders it.

``generate --chat PROMPT`` renders one user turn through the checkpoint's chat template, after a
system turn when ``--system`` is given, and opens the assistant's turn.  The reference is
transformers' ``apply_chat_template`` on the checkpoint's Hugging Face export (the same template
and tokenizer, read by transformers), with the messages written out here: no system turn without
``--system``, an empty one for ``--system ""``, the text given otherwise.  The template writes the
tokenizer's BOS and EOS tokens too, so the renderer must be given the checkpoint's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.checkpoint import make_manifest, save_checkpoint
from engine.hf_interop import export_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.chat_templates import TEMPLATE
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPT = "Write a function that adds two numbers."
SYSTEMS: tuple[str | None, ...] = (None, "", "You answer in Python only.")


@checker(observes=["requests", "rows", "prompt_ids_differing", "exit_codes_nonzero"], ids=["FALSIFY-GEN-014"])
def chat_prompt_as_transformers_renders(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """``generate --chat`` without a system turn, with an empty one and with one, against
    transformers' rendering of the same messages with the exported tokenizer."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    tokenizer = EngineTokenizer.from_json(engine_tokenizer.to_json())
    tokenizer.chat_template = TEMPLATE
    model = tiny_model_factory(0)
    work = fresh_dir(tmp_path, "chat-prompt-")
    ckpt = save_checkpoint(work / "model.safetensors", model, tokenizer, make_manifest(step=0))
    theirs = transformers.AutoTokenizer.from_pretrained(str(export_hf(model, tokenizer, work / "hf")))
    run = cli_runner()
    out = {"requests": 0, "rows": 0, "prompt_ids_differing": 0, "exit_codes_nonzero": 0}
    for system in SYSTEMS:
        flags = () if system is None else ("--system", system)
        result = run("generate", ckpt, "-p", PROMPT, "--chat", *flags, "--max-new-tokens", 1, "--json")
        out["requests"] += 1
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        messages = ([] if system is None else [{"role": "system", "content": system}]) + [
            {"role": "user", "content": PROMPT}
        ]
        # rendered, then tokenized as apply_chat_template tokenizes (no special tokens added): the
        # same on transformers 4.x, which returns ids, and 5.x, which returns a BatchEncoding
        rendered = theirs.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        want = list(theirs.encode(rendered, add_special_tokens=False))
        for row in json.loads(result.stdout):
            out["rows"] += 1
            out["prompt_ids_differing"] += row.get("prompt_ids") != want
    return out
