"""What GGUF import makes of other converters' files: token types, what it reports, rope_freqs.

CONTROL tokens are special, USER_DEFINED ones plain added tokens.

GGUF files from other converters mark a model's added tokens with ``tokenizer.ggml.token_type``:
CONTROL for tokens a model uses as markup (left out when a decode skips special tokens), and
USER_DEFINED for tokens added to the vocabulary for their text (kept by every decode).  Both are
matched whole wherever they occur in a text, before byte-level BPE splits the rest.  The engine's
own export writes no USER_DEFINED token, so here its llama export is written again with three of
its ordinary multi-character tokens retyped: two USER_DEFINED, one CONTROL.  The imported
tokenizer's ids for texts holding them, and its decodes with and without skipping special tokens,
are compared with what the tokenizers library's documented added-token rules give, written out
here: the text split at each occurrence, every other part encoded as the tokenizer encodes it alone.
The model it imports, asked for no dtype, holds the file's float32, and the import names what it
read: the file, no safetensors metadata, and a manifest of step 0 naming the file, its format,
sha256, file type (gguf-py's name for ``general.file_type``; none for a number gguf-py does not
know) and tensor types; exported again, the file's tokens and token types come back as they were.

Converters of Llama 3.1 models add ``rope_freqs.weight``, per-dimension factors llama.cpp divides
the rotary frequencies by.  Factors of exactly 1 are plain RoPE and import as the file without
them does; any other factor is a RoPE the engine does not run and must be refused by name.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import ExportError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.tokenizer import EngineTokenizer
from falsifiers.engine_files.gguf_reading import _exported, rewrite_gguf
from pv.checkers import checker

CONTROL, USER_DEFINED = 3, 4  # gguf.TokenType
TEXTS = ("x{u0}y", "{u1} and {u0}{c}!", "a{c}b {u1}", "no marked token in it")


def _pieces(text: str, marked: list[str]) -> list[tuple[str, bool]]:
    """``text`` split at every occurrence of a marked token (longest first): (part, is a marked token)."""
    out: list[tuple[str, bool]] = []
    rest = text
    while rest:
        hits = [(rest.find(m), -len(m), m) for m in marked if m in rest]
        if not hits:
            out.append((rest, False))
            break
        at, _, token = min(hits)
        if at:
            out.append((rest[:at], False))
        out.append((token, True))
        rest = rest[at + len(token) :]
    return out


@checker(
    observes=[
        "texts",
        "ids_differing",
        "decodes_differing",
        "skipping_decodes_differing",
        "marked",
        "marked_tokens",
        "model_dtypes",
        "manifest_fields_differing",
        "reexport_types_differing",
        "unknown_file_type_named",
        "rope_freqs_ones_differing",
        "rope_freqs_scaled_refused",
    ],
    ids=["FALSIFY-IO-012", "FALSIFY-IO-013"],
)
def token_types_as_documented(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """The engine's llama GGUF with two tokens retyped USER_DEFINED and one CONTROL, imported."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    _, full = _exported(tmp_path, engine_tokenizer, tiny_model_factory, "llama")
    reader = gguf.GGUFReader(str(full))
    tokens: list[str] = reader.fields["tokenizer.ggml.tokens"].contents()
    types: list[int] = reader.fields["tokenizer.ggml.token_type"].contents()
    # three ordinary tokens of several ASCII letters (their byte-level form is their text)
    words = [i for i, t in enumerate(tokens) if types[i] == 1 and t.isascii() and t.isalpha() and len(t) >= 4]
    chosen = [words[0], words[1], words[2]]
    new_types = list(types)
    new_types[chosen[0]] = new_types[chosen[1]] = USER_DEFINED
    new_types[chosen[2]] = CONTROL
    retyped = rewrite_gguf(full, full.with_name("retyped.gguf"), values={"tokenizer.ggml.token_type": new_types})
    unmarked = import_gguf(full)  # the same file with nothing marked: its tokenizer encodes the parts
    plain = unmarked.tokenizer
    imported = import_gguf(retyped)
    tok = imported.tokenizer
    u0, u1, c = (tokens[i] for i in chosen)
    ids_of = {u0: chosen[0], u1: chosen[1], c: chosen[2]}
    out: dict[str, Any] = {"texts": 0, "ids_differing": 0, "decodes_differing": 0, "skipping_decodes_differing": 0}
    out |= {"marked": len({u0, u1, c}), "marked_tokens": [u0, u1, c]}
    for template in TEXTS:
        text = template.format(u0=u0, u1=u1, c=c)
        parts = _pieces(text, [u0, u1, c])
        want: list[int] = []
        for part, marked in parts:
            want += [ids_of[part]] if marked else plain.encode(part, add_bos=False)
        got = tok.encode(text, add_bos=False)
        out["texts"] += 1
        out["ids_differing"] += got != want
        out["decodes_differing"] += tok.decode(got, skip_special_tokens=False) != text
        kept = "".join(part for part, marked in parts if part != c or not marked)
        out["skipping_decodes_differing"] += tok.decode(got, skip_special_tokens=True) != kept
    # asked for no dtype, import keeps the file's float32 (a float64 state would build a float64 model)
    out["model_dtypes"] = sorted({str(p.dtype) for p in imported.model.parameters()})
    out["manifest_fields_differing"] = _manifest_differing(imported, retyped, reader)
    # exported again, the tokens and their types come back as the file had them
    again = gguf.GGUFReader(str(export_gguf(imported.model, tok, retyped.with_name("again.gguf"), "f32")))
    out["reexport_types_differing"] = int(
        again.fields["tokenizer.ggml.tokens"].contents() != tokens
        or again.fields["tokenizer.ggml.token_type"].contents() != new_types
    )
    unknown = rewrite_gguf(full, full.with_name("unknown-type.gguf"), values={"general.file_type": 999})
    out["unknown_file_type_named"] = import_gguf(unknown).manifest.get("source_file_type", "absent") is not None
    out |= _rope_freqs(full, unmarked.model.state_dict(), unmarked.config.head_dim)
    return out


def _manifest_differing(imported: Any, path: Path, reader: Any) -> int:
    """Fields of import_gguf's result and manifest that are not what the file is, written out."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    want = {
        "step": 0, "imported_from": str(path), "source_format": "gguf",
        "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "source_file_type": gguf.LlamaFileType(int(reader.fields["general.file_type"].contents())).name,
        "source_tensor_types": dict(sorted(Counter(t.tensor_type.name for t in reader.tensors).items())),
    }  # fmt: skip
    got = imported.manifest
    return sum(got.get(k) != v for k, v in want.items()) + (imported.path != path) + (imported.metadata != {})


def _rope_freqs(full: Path, plain: dict[str, Any], head_dim: int) -> dict[str, Any]:
    """The file with rope_freqs.weight of ones (imports as without) and of Llama 3.1-like factors."""

    out = {"rope_freqs_ones_differing": -1, "rope_freqs_scaled_refused": False}
    half = head_dim // 2
    for name, factors in (
        ("ones", np.ones(half, np.float32)),
        ("scaled", np.linspace(1.0, 8.0, half, dtype=np.float32)),
    ):

        def with_factors(arrays: dict[str, Any], f: Any = factors) -> dict[str, Any]:
            return {**arrays, "rope_freqs.weight": f}

        path = rewrite_gguf(full, full.with_name(f"rope-{name}.gguf"), tensors=with_factors)
        try:
            state = import_gguf(path).model.state_dict()
        except ExportError as exc:
            if name == "scaled":
                out["rope_freqs_scaled_refused"] = "rope_freqs.weight" in str(exc)
            continue
        if name == "ones":
            out["rope_freqs_ones_differing"] = sum(not (state[k] == v).all() for k, v in plain.items())
    return out
