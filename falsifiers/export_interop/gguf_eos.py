"""A model's end-of-generation ids through a GGUF file: the keys llama.cpp stops on, and back.

A GGUF file names up to three ids generation ends on: ``tokenizer.ggml.eos_token_id``,
``eot_token_id`` (end of turn) and ``eom_token_id`` (end of message); Llama 3 checkpoints stop on
three.  Models with one to four EOS ids are exported, the keys read back with gguf-py, the file
imported again, and the imported model decoded: it must stop where greedy decoding written out
here, with the same ids, stops.  A fourth id, which the format cannot hold, must be named in a
warning rather than dropped in silence.  ``add_eos_token`` must be the tokenizer's own rule, as the
``tokenizers`` library applies it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from engine.generate import generate
from engine.gguf_export import GgufEosWarning, export_gguf
from engine.gguf_import import import_gguf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.realistic_models import realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

KEYS = (
    "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
    "tokenizer.ggml.add_eos_token",
)  # fmt: skip
STEPS = 16


def _keys(path: Path) -> list[Any]:
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    from gguf import GGUFReader

    fields = GGUFReader(str(path)).fields
    return [fields[k].contents() if k in fields else None for k in KEYS]


@checker(
    observes=["models", "key_mismatches", "imported_eos_mismatches", "stops_differing", "warned_of_the_fourth"],
    ids=["FALSIFY-EXPORT-014"],
)
def eos_ids_survive_gguf(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """A tiny Llama whose EOS ids are the tokenizer's EOS and then the tokens greedy decoding gives
    at steps 12, 8 and 4 (one to four ids), exported to GGUF, read with gguf-py, imported, decoded."""

    work = fresh_dir(tmp_path, "gguf-eos-")
    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    model = realistic_model(tiny_model_factory, 0, "llama").eval()
    prompt = engine_tokenizer.encode_prompt("def main():")
    free = _greedy(model, prompt, STEPS, set())
    later = [t for t in (free[11], free[7], free[3]) if t != engine_tokenizer.eos_id]
    out = {"models": 0, "key_mismatches": 0, "imported_eos_mismatches": 0, "stops_differing": 0}
    out["warned_of_the_fourth"] = False
    for n in range(1, 5):
        ids = tuple(dict.fromkeys([engine_tokenizer.eos_id, *later]))[:n]
        model.config = model.config.replace(eos_token_id=ids if n > 1 else ids[0])
        path = work / f"eos-{n}.gguf"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            export_gguf(model, engine_tokenizer, path)
        warned = [str(w.message) for w in caught if issubclass(w.category, GgufEosWarning)]
        if n == 4:
            out["warned_of_the_fourth"] = len(ids) == 4 and any(str(ids[3]) in w for w in warned)
        else:
            out["key_mismatches"] += bool(warned)  # a warning where nothing was dropped
        kept = ids[:3]
        out["models"] += 1
        # add_eos_token is the tokenizer's own rule: its encode (tokenizers' post-processor included) ends
        # a text with EOS or not, and llama.cpp appends one exactly when the key says so
        appends_eos = backend.encode("def main():").ids[-1:] == [engine_tokenizer.eos_id]
        out["key_mismatches"] += _keys(path) != [*kept, *[None] * (3 - len(kept)), appends_eos]
        imported = import_gguf(path)
        out["imported_eos_mismatches"] += imported.config.eos_ids != kept
        want = _greedy(model, prompt, STEPS, set(kept))
        got = generate(imported.model.eval(), torch.tensor([prompt]), max_new_tokens=STEPS).new_tokens[0]
        out["stops_differing"] += list(got) != want
    return out
