"""A BOS token a tokenizer has but does not add is still its BOS in the exported folder.

Two kinds of tokenizer start no prompt with BOS: Qwen2's, which has no BOS at all (the engine lets
its EOS stand in, and never exports the stand-in as a BOS), and SmolLM2's, which has a BOS of its
own, ``<|im_start|>``, that only its chat template writes.  The second must be exported by name, so
that transformers' tokenizer and generation config know it.  Here the engine's tokenizer, with its
own ``<|bos|>``, is set not to add it and exported with ``export_hf``; the folder is read with
transformers' AutoTokenizer, AutoConfig and GenerationConfig and with ``json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.hf_interop import export_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEXT = "def area(r):\n    return 3.14159 * r * r\n"


@checker(observes=["files", "transformers", "prompt_starts_with_bos"], ids=["FALSIFY-EXPORT-017"])
def unadded_bos_exported_by_name(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """The tiny model with the engine tokenizer set not to add its BOS, exported and read back."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    tok = EngineTokenizer(
        engine_tokenizer.backend,
        engine_tokenizer.bos_token,
        engine_tokenizer.eos_token,
        engine_tokenizer.pad_token,
        add_bos_token=False,
        chat_template=engine_tokenizer.chat_template,
    )
    model = tiny_model_factory(0, vocab_size=tok.vocab_size)
    out = export_hf(model, tok, fresh_dir(tmp_path, "unadded-bos-") / "hf")

    def read(name: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((out / name).read_text(encoding="utf-8"))
        return doc

    files = [
        read("tokenizer_config.json").get("bos_token"),
        read("special_tokens_map.json").get("bos_token"),
        read("config.json").get("bos_token_id") == tok.bos_id,
        read("generation_config.json").get("bos_token_id") == tok.bos_id,
        read("tokenizer_config.json").get("add_bos_token"),
    ]
    theirs = AutoTokenizer.from_pretrained(out)
    ids = theirs(TEXT)["input_ids"]
    transformers = [
        theirs.bos_token,
        theirs.bos_token_id == tok.bos_id,
        AutoConfig.from_pretrained(out).bos_token_id == tok.bos_id,
        GenerationConfig.from_pretrained(out).bos_token_id == tok.bos_id,
        ids == tok.encode_prompt(TEXT),
    ]
    return {
        "files": [_named(v) for v in files],
        "transformers": [_named(v) for v in transformers],
        "prompt_starts_with_bos": ids[:1] == [tok.bos_id],
    }


def _named(value: Any) -> Any:
    return "none" if value is None else value  # a BOS the folder leaves unnamed
