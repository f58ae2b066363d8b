"""A tokenizer's token table and merges are its backend's, and its cache entry is named by the
corpus digest's documented formula.

GGUF export writes ``EngineTokenizer.tokens()`` and ``merges()`` as llama.cpp's vocabulary, so a
token added after training (a tool-call marker) must be in the table at its id, and a vocabulary
with a gap must be refused rather than written with an empty string in the hole.  The corpus
digest names the data a run learned from (manifests, cache entries); it is written out here from
its documentation, so another tool can compute it.  A cache that cannot be written still gives
the trained tokenizer.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from unittest import mock

from tokenizers import Tokenizer, models

from engine.corpus import corpus_digest
from engine.errors import TokenizerError
from engine.tokenizer import (
    BOS_TOKEN,
    CACHE_ENV,
    EOS_TOKEN,
    PAD_TOKEN,
    EngineTokenizer,
    cached_tokenizer,
    train_tokenizer_from_texts,
    training_digest,
)
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

ADDED = "<tool_call>"
TEXTS = ("héllo wörld\n", "", "a", "tab\there " * 40)
VOCAB = 300


def _digest(texts: list[str]) -> str:
    """sha256 over each text as its UTF-8 byte count (8 bytes, little-endian) and then its bytes."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _tokens(tok: EngineTokenizer) -> list[str] | str:
    try:
        return tok.tokens()
    except TokenizerError as exc:
        return f"refused: {exc}"


@checker(
    observes=[
        "tokens_differing",
        "added_at_its_id",
        "merges_differing",
        "word_level_merges",
        "gap_refused",
        "digests_differing",
        "cache_entry",
        "unwritable_cache_gives_trained",
        "default_cache_entries",
    ],
    ids=["FALSIFY-TOK-008"],
)
def tokenizer_tables(engine_tokenizer: EngineTokenizer, tmp_path: Path) -> dict[str, Any]:
    """The session's tokenizer with a token added after training; a word-level tokenizer with and
    without a gap in its ids; the corpus digest of four texts; ``cached_tokenizer`` into a fresh
    cache, into one that cannot be written, and into the default one under a fresh home folder."""
    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    backend.add_tokens([ADDED])
    added = engine_tokenizer.with_backend(backend)
    n = backend.get_vocab_size(with_added_tokens=True)
    want = [backend.id_to_token(i) for i in range(n)]
    got = _tokens(added)
    at = backend.token_to_id(ADDED)
    out: dict[str, Any] = {
        "tokens_differing": (
            [got] if isinstance(got, str) else [i for i in range(max(n, len(got))) if got[i : i + 1] != want[i : i + 1]]
        ),
        "added_at_its_id": isinstance(got, list) and at is not None and got[at : at + 1] == [ADDED],
    }
    # every merge joins two tokens of the vocabulary into a third, one per token the trainer added
    vocab = set(want)
    merges = added.merges()
    pairs = [m.split(" ") for m in merges]
    out["merges_differing"] = [
        m for m, p in zip(merges, pairs, strict=True) if len(p) != 2 or not {*p, "".join(p)} <= vocab
    ]
    out["merges_differing"] += [] if len(merges) == engine_tokenizer.vocab_size - 3 - 256 else [f"{len(merges)} merges"]

    specials = {BOS_TOKEN: 0, EOS_TOKEN: 1, PAD_TOKEN: 2}
    word = EngineTokenizer(Tokenizer(models.WordLevel({**specials, "a": 3, "b": 4}, unk_token=PAD_TOKEN)))
    out["word_level_merges"] = word.merges()
    gap = EngineTokenizer(Tokenizer(models.WordLevel({**specials, "a": 3, "c": 5}, unk_token=PAD_TOKEN)))
    out["gap_refused"] = _tokens(gap) == "refused: token ids are not contiguous: 'c' has id 5 of 5"

    cases = [list(TEXTS), [], ["ab"], ["a", "b"], ["", "ab"]]
    out["digests_differing"] = [i for i, texts in enumerate(cases) if corpus_digest(texts) != _digest(texts)]

    work = fresh_dir(tmp_path, "tokenizer-tables-")
    files = []
    for i, text in enumerate(TEXTS * 30):
        files.append(work / "corpus" / f"{i:03d}.txt")
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_bytes(text.encode("utf-8"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    trained = train_tokenizer_from_texts(texts, VOCAB)
    entry = f"bpe-v{VOCAB}-{_digest(texts)[:16]}-{training_digest(VOCAB)[:16]}.json"
    unwritable = work / "a-file"
    unwritable.write_text("not a folder", encoding="utf-8")
    with mock.patch.dict(os.environ, {CACHE_ENV: str(work / "cache")}):
        fresh = cached_tokenizer(VOCAB, files)
        names = sorted(p.name for p in (work / "cache" / "tokenizers").iterdir())
        out["cache_entry"] = names == [entry] and fresh == trained
    with mock.patch.dict(os.environ, {CACHE_ENV: str(unwritable)}):
        out["unwritable_cache_gives_trained"] = cached_tokenizer(VOCAB, files) == trained and unwritable.is_file()
    # PV_ENGINE_CACHE unset, then empty: the documented default, ~/.cache/pv-engine
    out["default_cache_entries"] = []
    for setting in (None, ""):
        home = fresh_dir(work, "home-")
        env = {"HOME": str(home)} | ({} if setting is None else {CACHE_ENV: setting})
        with mock.patch.dict(os.environ, env):
            if setting is None:
                os.environ.pop(CACHE_ENV, None)
            cached_tokenizer(VOCAB, files)
        out["default_cache_entries"].append(
            sorted(str(p.relative_to(home)) for p in home.rglob("*.json")) == [f".cache/pv-engine/tokenizers/{entry}"]
        )
    return out
