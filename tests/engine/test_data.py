from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.data import (
    IGNORE_INDEX,
    PROMPT_TEMPLATE,
    InstructionPair,
    TokenData,
    extract_instruction_pairs,
    extract_pairs_from_source,
    load_shards,
    read_jsonl,
    tokenize_corpus,
    tokenize_pairs,
    write_jsonl,
    write_shards,
)
from engine.tokenizer import EngineTokenizer, cached_tokenizer

SOURCE = '''
def documented(a, b):
    """Add two numbers.

    Returns their sum.
    """
    c = a + b
    return c


def undocumented(x):
    return x


def only_doc():
    """Nothing else."""


class Box:
    def method(self):
        """Open the box."""
        return self.inside
'''


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return cached_tokenizer(512)


@pytest.fixture(scope="module")
def data(tok: EngineTokenizer) -> TokenData:
    return tokenize_corpus(tok)


def test_corpus_split_is_deterministic(tok: EngineTokenizer, data: TokenData) -> None:
    again = tokenize_corpus(tok)
    assert again.digest == data.digest
    assert torch.equal(again.train, data.train) and torch.equal(again.val, data.val)
    share = data.val.numel() / (data.train.numel() + data.val.numel())
    assert 0.08 < share < 0.12
    assert int(data.train.max()) < tok.vocab_size
    assert (data.train == tok.bos_id).sum() > 1  # one bos per document


def test_batches_are_a_function_of_seed_and_step(data: TokenData) -> None:
    assert torch.equal(data.batch(5, 4, 16, seed=0), data.batch(5, 4, 16, seed=0))
    assert not torch.equal(data.batch(5, 4, 16, seed=0), data.batch(5, 4, 16, seed=1))
    assert not torch.equal(data.batch(5, 4, 16, seed=0), data.batch(6, 4, 16, seed=0))


def test_one_epoch_visits_every_window_once() -> None:
    stream = torch.arange(40)
    small = TokenData(stream, stream[:8], 64, "x")
    seen = torch.cat([small.batch(s, 2, 4, seed=3) for s in range(5)])  # 10 windows of 4
    assert sorted(seen[:, 0].tolist()) == list(range(0, 40, 4))


def test_shards_round_trip_and_detect_tampering(tmp_path: Path, data: TokenData) -> None:
    folder = write_shards(data, tmp_path / "shards", shard_tokens=100_000)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert len(manifest["files"]["train"]) == -(-data.train.numel() // 100_000)
    loaded = load_shards(folder)
    assert torch.equal(loaded.train, data.train) and loaded.digest == data.digest
    first = folder / manifest["files"]["train"][0]
    tokens = load_file(str(first))["tokens"]
    tokens[0] += 1
    save_file({"tokens": tokens}, str(first))
    with pytest.raises(ValueError, match="digest"):
        load_shards(folder)


def test_pairs_come_from_documented_functions() -> None:
    pairs = list(extract_pairs_from_source(SOURCE, "demo"))
    assert [p.source for p in pairs] == ["demo:documented", "demo:Box.method"]
    assert pairs[0].prompt == "Add two numbers.\n\nReturns their sum."
    assert pairs[0].response == "c = a + b\nreturn c"
    assert pairs[1].response == "return self.inside"
    assert list(extract_pairs_from_source("def broken(:\n", "bad")) == []


def test_stdlib_pairs_and_jsonl(tmp_path: Path) -> None:
    pairs = extract_instruction_pairs(max_pairs=50)
    assert len(pairs) == 50
    assert all(p.prompt and p.response and ":" in p.source for p in pairs)
    path = write_jsonl(pairs, tmp_path / "pairs.jsonl")
    assert read_jsonl(path) == pairs
    assert path.read_text().splitlines()[0] == json.dumps(pairs[0].to_dict(), sort_keys=True, ensure_ascii=False)
    path.write_text(path.read_text() + '{"prompt": "x"}\n')
    with pytest.raises(ValueError, match=r"pairs.jsonl:51"):
        read_jsonl(path)


def test_tokenized_pairs_learn_only_the_response(tok: EngineTokenizer) -> None:
    pairs = [InstructionPair(f"Doc {i}.", f"return {i}", f"m:f{i}") for i in range(20)]
    inst = tokenize_pairs(pairs, tok, seq_len=48)
    assert inst.input_ids.shape == (18, 48) and inst.val_input_ids.shape == (2, 48)
    ids, labels = inst.input_ids[0], inst.labels[0]
    n_prompt = len(tok.encode(PROMPT_TEMPLATE.format(prompt="Doc 0."), add_bos=True))
    assert (labels[:n_prompt] == IGNORE_INDEX).all()
    response = tok.encode("return 0", add_eos=True)
    assert labels[n_prompt : n_prompt + len(response)].tolist() == response
    assert (labels[n_prompt + len(response) :] == IGNORE_INDEX).all()
    assert (ids[n_prompt + len(response) :] == tok.pad_id).all()
    b1, _ = inst.batch(3, 4, seed=0)
    b2, _ = inst.batch(3, 4, seed=0)
    assert torch.equal(b1, b2)
    with pytest.raises(ValueError, match="usable"):
        tokenize_pairs(pairs[:1], tok, seq_len=48)
