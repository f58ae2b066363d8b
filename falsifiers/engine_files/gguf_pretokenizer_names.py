"""A GGUF file names its pre-tokenizer (``tokenizer.ggml.pre``): the engine writes the name of the
rule its tokenizer really cuts text with, and import cuts text by that name as the rule's owners do.

The rules are written here from their own sources, not from the engine's table: SmolLM's
tokenizer.json (every digit its own piece, then GPT-2's byte-level split), Qwen2's (transformers'
``PRETOKENIZE_REGEX``, isolated, then byte-level without a regex) and GPT-2's.  The engine's
tokenizer is given each rule, exported with a tiny model, the file's name read with gguf-py, and the
file imported: its pieces and ids for texts with runs of digits, contractions, line breaks and
other scripts must be those of the rule written here.  GPT-2's split with untrimmed offsets is
still GPT-2's; a rule llama.cpp has no name for (a whitespace split) and a tokenizer with no
pre-tokenizer are refused, naming the rules it has, before a file is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import Regex, Tokenizer, pre_tokenizers

from engine.errors import ExportError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEXTS = (
    "In 2024 we sold 1234567 units, and 89 more.",
    "I'm sure they've said it's done\n\n  twice\r\nand",
    "Привет 世界 3.14159 x2y",
    "    indented 007 code()",
)


def reference_rules() -> dict[str, Any]:
    """llama.cpp name -> the pre-tokenizer its owners ship, built from their sources."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    def gpt2() -> Any:
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)

    return {
        "gpt-2": gpt2(),
        # the same split with offsets left untrimmed (trim_offsets moves offsets, never pieces)
        "gpt-2 ": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True, trim_offsets=False),
        "smollm": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), gpt2()]),
        "qwen2": pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        ),
    }


def _pieces(tokenizer: Any, text: str) -> list[str]:
    return [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(text)]


@checker(
    observes=[
        "rules",
        "exports_refused",
        "unknown_refused",
        "names_differing",
        "texts",
        "pieces_differing",
        "ids_differing",
        "digit_runs_split",
    ],
    ids=["FALSIFY-IO-014"],
)
def pretokenizer_names_round_trip(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """Each rule given to the engine's tokenizer, exported, named, imported and compared."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    out: dict[str, Any] = {"rules": 0, "names_differing": 0, "texts": 0, "pieces_differing": 0, "ids_differing": 0}
    out["digit_runs_split"], out["exports_refused"] = 0, 0
    model = tiny_model_factory(0)
    for name, rule in reference_rules().items():
        backend = Tokenizer.from_str(engine_tokenizer.backend.to_str())
        backend.pre_tokenizer = rule
        tokenizer = engine_tokenizer.with_backend(backend)
        out["rules"] += 1
        try:
            path = export_gguf(model, tokenizer, fresh_dir(tmp_path, f"pre-{name}-") / "m.gguf")
        except ExportError:  # the rule matched none of the engine's names
            out["exports_refused"] += 1
            continue
        field = gguf.GGUFReader(str(path)).fields["tokenizer.ggml.pre"]
        out["names_differing"] += bytes(field.parts[field.data[0]]).decode() != name.strip()
        imported = import_gguf(path).tokenizer
        for text in TEXTS:
            out["texts"] += 1
            want = _pieces(backend, text)
            out["pieces_differing"] += _pieces(imported.backend, text) != want
            out["ids_differing"] += imported.encode(text) != tokenizer.encode(text)
            if name == "smollm":  # every digit its own piece, as SmolLM's own tokenizer cuts them
                out["digit_runs_split"] += all(len(p.strip("Ġ")) <= 1 for p in want if p.strip("Ġ").isdigit())
    # rules llama.cpp has no name for, and no rule at all: refused before a file is written
    out["unknown_refused"] = 0
    for label, rule in (("whitespace", pre_tokenizers.Whitespace()), ("none", None)):
        backend = Tokenizer.from_str(engine_tokenizer.backend.to_str())
        backend.pre_tokenizer = rule
        target = fresh_dir(tmp_path, f"pre-{label}-") / "m.gguf"
        try:
            export_gguf(model, engine_tokenizer.with_backend(backend), target)
        except ExportError as exc:
            out["unknown_refused"] += "gpt-2" in str(exc) and not target.exists()
    return out
