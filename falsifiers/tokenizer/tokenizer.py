"""The engine's tokenizer training, persistence and cache, against the ``tokenizers`` library and
properties written out here: what a user's pretraining and every checkpoint rest on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, pre_tokenizers

from engine.tokenizer import CACHE_ENV, EngineTokenizer, cached_tokenizer, train_tokenizer, train_tokenizer_from_texts
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# A small corpus of the kinds of text a code model sees; repeated so that BPE has pairs to merge.
CORPUS = (
    "def add(a, b):\n    return a + b\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n",
    "The quick brown fox jumps over the lazy dog. " * 3,
    "for i in range(10):\n\tprint(i, i ** 2)\n",
    "Les élèves étudient à l'école; naïve café — 1234.",
)
# Texts no training saw, in scripts and bytes a byte-level tokenizer must still carry exactly.
UNSEEN = (
    "",
    " ",
    "日本語のテキストと中文",
    "emoji 🚀🔥 and ZWJ 👩‍💻",
    "control \x00\x01\x7f and \r\n line ends\t",
    "Ωμέγα, Привет, مرحبا, שלום",
    "    indented\n\n\n    code();",
    "<|bos|> written as text",
)
SPECIALS = ["<|bos|>", "<|eos|>", "<|pad|>"]


@checker(
    observes=[
        "trained_vocab_size", "specials_in_place", "alphabet_complete", "round_trip_mismatches", "backend_mismatches",
        "retrain_identical", "files_identical", "reloads_equal", "too_small_refused",
    ],
    ids=["FALSIFY-TOK-001"],
)  # fmt: skip
def tokenizer_training(tmp_path: Path, vocab_size: int = 300, repeat: int = 20) -> dict[str, Any]:
    """Train on the corpus; check the vocabulary, the special ids, that every byte is in the
    alphabet, the exact round trip of unseen texts (also through the ``tokenizers`` backend read
    from the exported JSON), determinism, training from files, and the saved forms."""

    texts = [t for t in CORPUS for _ in range(repeat)]
    tok = train_tokenizer_from_texts(texts, vocab_size)
    tokens = tok.tokens()
    out: dict[str, Any] = {"trained_vocab_size": tok.vocab_size}
    out["specials_in_place"] = int(
        tokens[:3] == SPECIALS and (tok.bos_id, tok.eos_id, tok.pad_id) == (0, 1, 2) and tok.special_ids() == {0, 1, 2}
    )
    out["alphabet_complete"] = int(set(pre_tokenizers.ByteLevel.alphabet()) <= set(tokens))
    backend = Tokenizer.from_str(tok.hf_json())
    mismatches = backend_mismatches = 0
    for text in UNSEEN + CORPUS:
        ids = tok.encode(text)
        mismatches += tok.decode(ids) != text or any(not 0 <= i < tok.vocab_size for i in ids)
        mismatches += tok.encode(text, add_bos=True, add_eos=True) != [tok.bos_id, *ids, tok.eos_id]
        backend_mismatches += backend.encode(text, add_special_tokens=False).ids != ids
        backend_mismatches += backend.decode(ids, skip_special_tokens=False) != tok.decode(ids)
    mismatches += tok.encode_batch(list(UNSEEN), add_bos=True) != [tok.encode(t, add_bos=True) for t in UNSEEN]
    out["round_trip_mismatches"] = mismatches
    out["backend_mismatches"] = backend_mismatches
    again = train_tokenizer_from_texts(texts, vocab_size)
    out["retrain_identical"] = int(again.to_json() == tok.to_json() and again == tok and hash(again) == hash(tok))
    work = fresh_dir(tmp_path, "tokenizer-")
    files = []
    for i, text in enumerate(texts):
        path = work / "corpus" / f"{i:03d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(path)
    out["files_identical"] = int(train_tokenizer(vocab_size, files) == tok)
    (work / "tokenizer.json").write_text(tok.hf_json(), encoding="utf-8")
    reloaded = [EngineTokenizer.from_json(tok.to_json()), EngineTokenizer.from_hf_file(work / "tokenizer.json")]
    out["reloads_equal"] = sum(r == tok and r.encode(UNSEEN[3]) == tok.encode(UNSEEN[3]) for r in reloaded)
    try:
        train_tokenizer_from_texts(texts, 258)
        out["too_small_refused"] = 0
    except ValueError as exc:
        out["too_small_refused"] = int("259" in str(exc))
    return out


@checker(
    observes=["cache_files", "first_equals_trained", "second_from_cache", "sizes_kept_apart", "damaged_retrained"],
    ids=["FALSIFY-TOK-002"],
)
def tokenizer_cache(tmp_path: Path, sizes: tuple[int, ...] = (280, 300), repeat: int = 20) -> dict[str, Any]:
    """``cached_tokenizer`` with the cache in a fresh folder: a first call trains and writes one
    file per (vocabulary size, corpus), a second call reads it, two sizes never share an entry, and
    a damaged entry is retrained and rewritten."""

    work = fresh_dir(tmp_path, "tokenizer-cache-")
    files = []
    for i, text in enumerate(t for t in CORPUS for _ in range(repeat)):
        path = work / "corpus" / f"{i:03d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(path)
    texts = [p.read_text(encoding="utf-8") for p in files]
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(work / "cache")
    try:
        trained = {n: train_tokenizer_from_texts(texts, n) for n in sizes}
        first = {n: cached_tokenizer(n, files) for n in sizes}
        entries = sorted((work / "cache" / "tokenizers").glob("*.json"))
        out: dict[str, Any] = {"cache_files": len(entries)}
        out["first_equals_trained"] = sum(first[n] == trained[n] for n in sizes)
        for path in entries:  # marked, still valid: a call that returns the mark read the entry
            marked = EngineTokenizer.from_json(path.read_text(encoding="utf-8"))
            marked.chat_template = f"read from {path.name}"
            path.write_text(marked.to_json(), encoding="utf-8")
        second = [cached_tokenizer(n, files) for n in sizes]
        out["second_from_cache"] = sum(str(t.chat_template).startswith("read from bpe-") for t in second)
        out["sizes_kept_apart"] = int(len({t.vocab_size for t in first.values()}) == len(sizes))
        out["sizes_kept_apart"] &= int(all(first[n].vocab_size == trained[n].vocab_size for n in sizes))
        damaged = entries[0]
        damaged.write_text("{not json", encoding="utf-8")
        again = cached_tokenizer(sizes[0], files)  # the entry of the smallest size (names sort by size)
        rewritten = EngineTokenizer.from_json(damaged.read_text(encoding="utf-8"))
        out["damaged_retrained"] = int(again == trained[sizes[0]] and rewritten == trained[sizes[0]])
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before
    return out
