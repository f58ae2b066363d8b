"""GGUF token types as import reads them: CONTROL tokens are special, USER_DEFINED ones plain added
tokens.

GGUF files from other converters mark a model's added tokens with ``tokenizer.ggml.token_type``:
CONTROL for tokens a model uses as markup (left out when a decode skips special tokens), and
USER_DEFINED for tokens added to the vocabulary for their text (kept by every decode).  Both are
matched whole wherever they occur in a text, before byte-level BPE splits the rest.  The engine's
own export writes no USER_DEFINED token, so here its llama export is written again with three of
its ordinary multi-character tokens retyped: two USER_DEFINED, one CONTROL.  The imported
tokenizer's ids for texts holding them, and its decodes with and without skipping special tokens,
are compared with what the tokenizers library's documented added-token rules give, written out
here: the text split at each occurrence, every other part encoded as the tokenizer encodes it alone.
The model it imports, asked for no dtype, holds the file's float32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.tokenizer import EngineTokenizer
from falsifiers.gguf_reading import _exported, rewrite_gguf
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
    ],
    ids=["FALSIFY-IO-012"],
)
def token_types_as_documented(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """The engine's llama GGUF with two tokens retyped USER_DEFINED and one CONTROL, imported."""
    import gguf

    from engine.gguf_import import import_gguf

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
    plain = import_gguf(full).tokenizer  # the same vocabulary with nothing marked: encodes the parts
    imported = import_gguf(retyped)
    tok = imported.tokenizer
    u0, u1, c = (tokens[i] for i in chosen)
    ids_of = {u0: chosen[0], u1: chosen[1], c: chosen[2]}
    out: dict[str, Any] = {"texts": 0, "ids_differing": 0, "decodes_differing": 0, "skipping_decodes_differing": 0}
    out |= {"marked": len({u0, u1, c}), "marked_tokens": [u0, u1, c]}
    # asked for no dtype, import keeps the file's float32 (a float64 state would build a float64 model)
    out["model_dtypes"] = sorted({str(p.dtype) for p in imported.model.parameters()})
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
    return out
