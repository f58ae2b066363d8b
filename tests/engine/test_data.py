from __future__ import annotations

import json
from itertools import dropwhile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.data import (
    IGNORE_INDEX,
    PROMPT_TEMPLATE,
    ChatExample,
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
from tests.engine.core_helpers import tiny_tokenizer

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


def test_few_pairs_hold_one_out_and_never_train_on_it(tok: EngineTokenizer) -> None:
    pairs = [InstructionPair(f"Doc {i}.", f"return {i}", "") for i in range(3)]
    inst = tokenize_pairs(pairs, tok, seq_len=48)  # 3 pairs, every 10th held out: the last one instead
    assert inst.input_ids.shape[0] == 2 and inst.val_input_ids.shape[0] == 1
    assert not any(torch.equal(row, inst.val_input_ids[0]) for row in inst.input_ids)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.5, 2.0])
def test_val_fraction_outside_the_open_interval_is_refused(tok: EngineTokenizer, fraction: float) -> None:
    pairs = [InstructionPair(f"Doc {i}.", f"return {i}", "") for i in range(4)]
    with pytest.raises(ValueError, match=r"val_fraction must be in \(0, 1\)"):
        tokenize_pairs(pairs, tok, seq_len=48, val_fraction=fraction)


# --- chat-form instruction data ----------------------------------------------------------------


def _learned_text(tok, ids: list[int], labels: list[int]) -> list[str]:  # type: ignore[no-untyped-def]
    """The decoded runs of labelled tokens, in order."""
    runs, current = [], []
    for t, lab in zip(ids, labels, strict=True):
        if lab == IGNORE_INDEX:
            if current:
                runs.append(tok.decode(current))
                current = []
        else:
            assert lab == t
            current.append(t)
    if current:
        runs.append(tok.decode(current))
    return runs


def test_chat_tokens_learn_the_assistant_turns_only() -> None:
    from engine.data import chat_tokens
    from tests.engine.chat_helpers import chat_tokenizer

    tok = chat_tokenizer()
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a prime."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "Another?"},
        {"role": "assistant", "content": "Eleven."},
    ]
    ids, labels = chat_tokens(messages, tok)
    assert ids == tok.apply_chat_template(messages, add_generation_prompt=False)
    assert _learned_text(tok, ids, labels) == ["Seven.<|im_end|>\n", "Eleven.<|im_end|>\n"]


def test_pairs_and_conversations_through_the_chat_template(tmp_path: Path) -> None:
    from engine.data import read_examples
    from tests.engine.chat_helpers import chat_tokenizer

    tok = chat_tokenizer()
    path = tmp_path / "chat.jsonl"
    rows = [{"prompt": f"What is {i} + {i}?", "response": f"It is {2 * i}."} for i in range(4)]
    rows += [{"messages": [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples = read_examples(path)
    data = tokenize_pairs(examples, tok, seq_len=96, template="chat", val_fraction=0.5)
    everything = torch.cat([data.input_ids, data.val_input_ids])
    labels = torch.cat([data.labels, data.val_labels])
    for row_ids, row_labels in zip(everything.tolist(), labels.tolist(), strict=True):
        learned = _learned_text(tok, row_ids, row_labels)
        assert len(learned) == 1 and learned[0].endswith("<|im_end|>\n")
        assert "user" not in learned[0] and "system" not in learned[0]
        trailing = len(row_ids) - len(list(dropwhile(lambda t: t == tok.pad_id, reversed(row_ids))))
        assert trailing > 0  # the rows are padded to seq_len, and padding is never learned
        assert all(
            lab == IGNORE_INDEX for lab in row_labels[len(row_ids) - trailing :]
        )  # ... and padding is never learned
    # the same pairs through the docstring recipe learn the response after "### Code"
    plain = tokenize_pairs(examples[:4], tok, seq_len=96, template="docstring", val_fraction=0.5)
    assert plain.digest != data.digest


def test_templates_are_chosen_explicitly_or_by_the_checkpoint() -> None:
    from engine.data import resolve_template
    from tests.engine.chat_helpers import chat_tokenizer

    assert resolve_template("auto", chat_tokenizer()) == "chat"
    assert resolve_template("auto", tiny_tokenizer()) == "docstring"
    with pytest.raises(ValueError, match="no chat template"):
        resolve_template("chat", tiny_tokenizer())
    with pytest.raises(ValueError, match="unknown template"):
        resolve_template("alpaca", tiny_tokenizer())
    conversation = ChatExample((("user", "hi"), ("assistant", "hello")))
    with pytest.raises(ValueError, match="needs the chat template"):
        tokenize_pairs([conversation, conversation], tiny_tokenizer(), 32, template="docstring")


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "no assistant message"),
        ({"messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]}, "starts with"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "role must be one of"),
        ({"question": "hi"}, "not an instruction pair or a chat conversation"),
    ],
)
def test_malformed_rows_name_the_line(tmp_path: Path, row: dict, fragment: str) -> None:  # type: ignore[type-arg]
    from engine.data import read_examples

    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "response": "b"}\n' + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=fragment) as exc:
        read_examples(path)
    assert f"{path}:2:" in str(exc.value)


def test_fault_chat_loss_on_prompt_learns_the_user_turn() -> None:
    from engine.data import chat_tokens
    from engine.faults import FAULTS
    from tests.engine.chat_helpers import chat_tokenizer

    tok = chat_tokenizer()
    messages = [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "Seven."}]
    with FAULTS.enabled("chat_loss_on_prompt"):
        ids, labels = chat_tokens(messages, tok)
    assert "Name a prime." in _learned_text(tok, ids, labels)[0]


def test_a_pair_body_is_the_code_after_the_docstring() -> None:
    import ast

    from engine.faults import FAULTS

    source = (
        'def one(): "One line."; return 1\n\n\n'
        "class K:\n"
        "    def m(self):\n"
        '        """Holds a string."""\n'
        '        s = """a\n    b\nc"""\n'
        "        return s\n"
    )
    pairs = {p.source: p for p in extract_pairs_from_source(source, "demo")}
    assert pairs["demo:one"].response == "return 1"
    body = ast.parse(source).body[1].body[0].body[1:]  # type: ignore[attr-defined]
    assert [ast.dump(s) for s in ast.parse(pairs["demo:K.m"].response).body] == [ast.dump(s) for s in body]
    with FAULTS.enabled("pair_body_from_line_start"):
        assert next(extract_pairs_from_source(source, "demo")).response.startswith("def one()")
