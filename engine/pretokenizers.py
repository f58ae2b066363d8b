"""llama.cpp's pre-tokenizer types (``tokenizer.ggml.pre``) as Hugging Face ``tokenizers`` pre-tokenizers.

Byte-level BPE merges are learned on pieces of text that a pre-tokenizer cut first; a tokenizer that
cuts differently gives other ids for the same text.  A GGUF file names its rule instead of
storing it, so import builds the rule from the name and export must find the name of the rule the
tokenizer really uses.  One table serves both directions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from tokenizers import Regex, Tokenizer, pre_tokenizers

from engine.faults import FAULTS

# Split patterns of llama.cpp's pre-tokenizer types (llama-vocab.cpp), as Hugging Face pre-tokenizers.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def gpt2() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


def _digits_then_gpt2() -> pre_tokenizers.PreTokenizer:
    # SmolLM's own tokenizer.json: every digit its own piece, then the GPT-2 split.
    individual = True
    if FAULTS.active("smollm_digits_grouped"):  # the defect: a run of digits stays one piece
        individual = False  # pragma: no mutate
    return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=individual), gpt2()])


def _split(pattern: str) -> pre_tokenizers.PreTokenizer:
    # built when asked for (through functools.partial in the table), not when this module is imported
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


PRE_TOKENIZERS: dict[str, Callable[[], pre_tokenizers.PreTokenizer]] = {
    "default": gpt2,
    "gpt-2": gpt2,
    "smollm": _digits_then_gpt2,
    "qwen2": partial(_split, _QWEN2_SPLIT),
    "llama-bpe": partial(_split, _LLAMA3_SPLIT),
    "llama3": partial(_split, _LLAMA3_SPLIT),
}


def _semantic(doc: Any) -> Any:
    """A pre-tokenizer's JSON without the fields that change offsets only, never the pieces."""
    if isinstance(doc, dict):
        return {k: _semantic(v) for k, v in doc.items() if k != "trim_offsets"}
    if isinstance(doc, list):
        return [_semantic(v) for v in doc]
    return doc


def _doc(pre: pre_tokenizers.PreTokenizer | None) -> Any:
    return None if pre is None else _semantic(json.loads(pre.__getstate__()))


def llama_cpp_name(tokenizer: Tokenizer) -> str | None:
    """The ``tokenizer.ggml.pre`` name of ``tokenizer``'s pre-tokenizer; None when llama.cpp has none."""
    own = _doc(tokenizer.pre_tokenizer)
    return next((name for name, build in PRE_TOKENIZERS.items() if name != "default" and _doc(build()) == own), None)
