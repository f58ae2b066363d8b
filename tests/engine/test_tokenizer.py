from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.corpus import CorpusFile, corpus_digest, default_corpus_files, read_corpus, stdlib_dir
from engine.errors import TokenizerError
from engine.tokenizer import (
    BOS_TOKEN,
    EngineTokenizer,
    cached_tokenizer,
    train_tokenizer,
    train_tokenizer_from_texts,
)


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return train_tokenizer(512)


def test_default_corpus_is_a_sorted_capped_stdlib_slice() -> None:
    files = default_corpus_files(max_bytes=200_000)
    names = [f.path.name for f in files]
    assert names == sorted(names)
    assert all(f.path.parent == stdlib_dir() for f in files)
    assert sum(len(f.path.read_bytes()[: f.limit]) for f in files) == 200_000
    assert all(f.limit is None for f in files[:-1])
    assert files[-1].limit is not None


def test_corpus_digest_tracks_content() -> None:
    texts = read_corpus(default_corpus_files(max_bytes=10_000))
    assert corpus_digest(texts) == corpus_digest(list(texts))
    assert corpus_digest(texts) != corpus_digest([*texts[:-1], texts[-1] + " "])
    # Boundaries count: the same characters split differently are a different corpus.
    assert corpus_digest(["ab", "c"]) != corpus_digest(["a", "bc"])


def test_special_tokens_take_the_first_ids(tok: EngineTokenizer) -> None:
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (0, 1, 2)
    assert tok.vocab_size == 512
    assert tok.tokens()[:3] == ["<|bos|>", "<|eos|>", "<|pad|>"]


def test_training_is_deterministic() -> None:
    a = train_tokenizer(400)
    b = train_tokenizer(400)
    assert a.to_json() == b.to_json()


def test_vocab_size_is_configurable_and_validated() -> None:
    texts = read_corpus(default_corpus_files(max_bytes=100_000))
    assert train_tokenizer_from_texts(texts, 300).vocab_size == 300
    with pytest.raises(ValueError, match="at least 259"):
        train_tokenizer_from_texts(texts, 100)


def test_encode_adds_bos_eos_on_request(tok: EngineTokenizer) -> None:
    plain = tok.encode("def f(x):\n    return x")
    assert tok.encode("def f(x):\n    return x", add_bos=True, add_eos=True) == [tok.bos_id, *plain, tok.eos_id]
    assert tok.decode([tok.bos_id, *plain], skip_special_tokens=True) == "def f(x):\n    return x"


def test_merges_compress_python_source(tok: EngineTokenizer) -> None:
    text = "    def __init__(self, name):\n        self.name = name\n"
    assert len(tok.encode(text)) < len(text.encode("utf-8")) / 2


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_roundtrip_any_text(text: str) -> None:
    tok = _module_tok()
    assert tok.decode(tok.encode(text)) == text


_TOK: list[EngineTokenizer] = []


def _module_tok() -> EngineTokenizer:
    if not _TOK:
        _TOK.append(cached_tokenizer(512))
    return _TOK[0]


def test_roundtrip_awkward_strings(tok: EngineTokenizer) -> None:
    for text in ["", " ", "\x00", "\r\n\t", "日本語テキスト", "🚀👩‍👩‍👧", "é" * 50, "<|eos|> inside", "  leading"]:
        assert tok.decode(tok.encode(text)) == text


def test_json_roundtrip_preserves_everything(tok: EngineTokenizer) -> None:
    again = EngineTokenizer.from_json(tok.to_json())
    assert again == tok
    assert again.encode("hello world") == tok.encode("hello world")
    assert (again.bos_id, again.eos_id, again.pad_id) == (tok.bos_id, tok.eos_id, tok.pad_id)


def test_plain_hf_json_loads_with_default_specials(tok: EngineTokenizer) -> None:
    again = EngineTokenizer.from_json(tok.hf_json())
    assert again.encode("import os") == tok.encode("import os")


def test_merges_are_space_separated_pairs_in_rank_order(tok: EngineTokenizer) -> None:
    merges = tok.merges()
    assert len(merges) == tok.vocab_size - 256 - 3
    assert all(len(m.split(" ")) == 2 for m in merges)
    vocab = {t: i for i, t in enumerate(tok.tokens())}
    # Each merge's product is a token, and earlier merges make lower ids.
    ids = [vocab[m.replace(" ", "")] for m in merges]
    assert ids == sorted(ids)


def _with_special(doc: dict, role: str, token: str, tid: int) -> str:
    return json.dumps({**doc, "special_tokens": {**doc["special_tokens"], role: {"token": token, "id": tid}}})


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: "not json", "not valid JSON"),
        (lambda d: json.dumps([1, 2]), "not an object"),
        (lambda d: json.dumps({"x": 1}), "not a tokenizer JSON"),
        (lambda d: json.dumps({**d, "version": 99}), "unsupported tokenizer JSON version"),
        (lambda d: json.dumps({**d, "special_tokens": {"bos": d["special_tokens"]["bos"]}}), "lacks the `eos`"),
        (
            lambda d: _with_special(d, "eos", "<|nope|>", 1),
            "eos token '<|nope|>' is not in the tokenizer's vocabulary",
        ),
        (
            lambda d: _with_special(d, "pad", BOS_TOKEN, 2),
            "pad token '<|bos|>' has id 0 in the vocabulary but 2",
        ),
        (lambda d: json.dumps({**d, "tokenizer": {"model": {"type": "Nope"}}}), "not describe a valid tokenizer"),
    ],
)
def test_bad_json_is_named(tok: EngineTokenizer, mutate: object, message: str) -> None:
    doc = json.loads(tok.to_json())
    with pytest.raises(TokenizerError, match=message.replace("(", r"\(").replace("|", r"\|")):
        EngineTokenizer.from_json(mutate(doc))  # type: ignore[operator]


def test_cache_is_keyed_by_vocab_and_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PV_ENGINE_CACHE", str(tmp_path))
    corpus = tmp_path / "corpus.py"
    corpus.write_text("def add(a, b):\n    return a + b\n" * 200)
    first = cached_tokenizer(300, [corpus])
    entries = sorted((tmp_path / "tokenizers").iterdir())
    assert len(entries) == 1 and entries[0].name.startswith("bpe-v300-")
    assert cached_tokenizer(300, [corpus]) == first
    cached_tokenizer(290, [corpus])
    corpus.write_text("class Other:\n    pass\n" * 200)
    cached_tokenizer(300, [CorpusFile(corpus)])
    assert len(list((tmp_path / "tokenizers").iterdir())) == 3


def test_damaged_cache_entry_is_retrained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PV_ENGINE_CACHE", str(tmp_path))
    corpus = tmp_path / "c.py"
    corpus.write_text("x = 1\n" * 500)
    good = cached_tokenizer(280, [corpus])
    (entry,) = (tmp_path / "tokenizers").iterdir()
    entry.write_text("{broken")
    assert cached_tokenizer(280, [corpus]) == good
    assert EngineTokenizer.from_json(entry.read_text()) == good


def test_training_merges_only_pairs_seen_twice() -> None:
    from engine.faults import FAULTS
    from engine.tokenizer import train_tokenizer_from_texts

    texts = ["qz", "qz", "vk"]
    merges = json.loads(train_tokenizer_from_texts(texts, 300).hf_json())["model"]["merges"]
    joined = {m if isinstance(m, str) else " ".join(m) for m in merges}
    assert "q z" in joined and "v k" not in joined
    with FAULTS.enabled("tokenizer_merges_singletons"):
        merges = json.loads(train_tokenizer_from_texts(texts, 300).hf_json())["model"]["merges"]
    assert "v k" in {m if isinstance(m, str) else " ".join(m) for m in merges}
