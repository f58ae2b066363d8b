"""What training reads: token shards on disk and the tokens a chat fine-tune learns from.

Shards are read back with safetensors' own ``safe_open`` and their digest recomputed here by the
formula written out below; chat conversations are rendered with Jinja2 directly (the sandbox and
whitespace flags transformers uses) and tokenized with the ``tokenizers`` backend, and the learned
tokens are decoded and compared with each assistant reply as written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from engine.data import (
    IGNORE_INDEX,
    SHARD_FORMAT,
    ChatExample,
    InstructionPair,
    TokenData,
    chat_tokens,
    load_shards,
    read_examples,
    read_jsonl,
    write_jsonl,
    write_shards,
)
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.chat_templates import CHAT_TEMPLATE, render
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

END_OF_TURN = "<|im_end|>\n"  # what CHAT_TEMPLATE writes after every turn
CONVERSATIONS: tuple[tuple[dict[str, str], ...], ...] = (
    (
        {"role": "system", "content": "You answer in one line."},
        {"role": "user", "content": "What does pv do?"},
        {"role": "assistant", "content": "It falsifies claims about ML code."},
    ),
    (
        {"role": "user", "content": "def add(a, b):"},
        {"role": "assistant", "content": "return a + b"},
        {"role": "user", "content": "And subtraction?"},
        {"role": "assistant", "content": "def sub(a, b):\n    return a - b"},
    ),
)


def stream_digest(train: torch.Tensor, val: torch.Tensor) -> str:
    """sha256 over the hex sha256 of each stream's int32 little-endian bytes, train then val."""

    def one(t: torch.Tensor) -> str:
        return hashlib.sha256(t.to(torch.int32).numpy().astype("<i4").tobytes()).hexdigest()

    return hashlib.sha256((one(train) + one(val)).encode()).hexdigest()


@checker(
    observes=[
        "shards",
        "shard_mismatches",
        "manifest_mismatches",
        "round_trip_equal",
        "tampered_refused",
        "rewrite_identical",
        "refusals_naming",
    ],
    ids=["FALSIFY-DATA-001"],
)
def shards_round_trip(tmp_path: Path, shard_tokens: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Write 4,321 train and 777 val tokens (vocab 50,000: beyond int16) as shards of
    ``shard_tokens``; read every shard with safe_open and the manifest with json, compare every
    field with the streams and the digest computed here (the manifest's bytes: indented, sorted
    JSON), load them back with their digest, write them again over the same folder (the same
    bytes), and change one token of one shard: loading must then refuse.  A folder with no
    manifest and one whose manifest names another format are refused naming the folder and what
    it found."""

    gen = torch.Generator().manual_seed(seed)
    vocab = 50_000
    train = torch.randint(0, vocab, (4321,), generator=gen)
    val = torch.randint(0, vocab, (777,), generator=gen)
    data = TokenData(train, val, vocab, stream_digest(train, val))
    # two folder levels that do not exist yet: the writer makes both
    folder = write_shards(data, fresh_dir(tmp_path, "shards-") / "corpus" / "out", shard_tokens=shard_tokens)
    raw = (folder / "manifest.json").read_text(encoding="utf-8")
    manifest = json.loads(raw)
    out: dict[str, Any] = {"shards": 0, "shard_mismatches": 0}
    expected_files: dict[str, list[str]] = {}
    for split, stream in (("train", train), ("val", val)):
        names = [f"{split}-{i:05d}.safetensors" for i in range(-(-stream.numel() // shard_tokens))]
        expected_files[split] = names
        pieces = []
        for name in names:
            out["shards"] += 1
            if not (folder / name).is_file():
                out["shard_mismatches"] += 1
                continue
            with safe_open(str(folder / name), "pt") as f:
                tokens = f.get_tensor("tokens")
                meta = f.metadata() or {}
            out["shard_mismatches"] += tokens.dtype != torch.int32 or meta != {"format": SHARD_FORMAT, "split": split}
            pieces.append(tokens.to(torch.int64))
        joined = torch.cat(pieces) if pieces else torch.empty(0, dtype=torch.int64)
        out["shard_mismatches"] += not torch.equal(joined, stream)
    want = {
        "format": SHARD_FORMAT,
        "vocab_size": vocab,
        "digest": stream_digest(train, val),
        "tokens": {"train": train.numel(), "val": val.numel()},
        "files": expected_files,
    }
    out["manifest_mismatches"] = sum(manifest.get(k) != v for k, v in want.items()) + len(set(manifest) - set(want))
    out["manifest_mismatches"] += raw != json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    extra = {p.name for p in folder.iterdir()} - {"manifest.json", *expected_files["train"], *expected_files["val"]}
    out["manifest_mismatches"] += len(extra)
    try:
        back = load_shards(folder)
        out["round_trip_equal"] = int(
            torch.equal(back.train, train)
            and torch.equal(back.val, val)
            # int64, as tokenize_corpus gives them (torch.equal alone accepts the int32 on disk)
            and back.train.dtype == back.val.dtype == torch.int64
            and back.vocab_size == vocab
            and back.digest == stream_digest(train, val)
        )
    except ValueError:  # the untouched shards refused: they are not what was written
        out["round_trip_equal"] = 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    try:
        write_shards(data, folder, shard_tokens=shard_tokens)
        out["rewrite_identical"] = int({p.name: p.read_bytes() for p in folder.iterdir()} == before)
    except OSError:
        out["rewrite_identical"] = 0
    target = folder / expected_files["train"][0]
    with safe_open(str(target), "pt") as f:
        tokens, meta = f.get_tensor("tokens").clone(), f.metadata()
    tokens[0] = (tokens[0] + 1) % vocab
    save_file({"tokens": tokens}, str(target), metadata=meta)
    try:
        load_shards(folder)
        out["tampered_refused"] = 0
    except ValueError as exc:
        out["tampered_refused"] = int("digest" in str(exc))
    empty, other = fresh_dir(tmp_path, "no-manifest-"), fresh_dir(tmp_path, "other-format-")
    (other / "manifest.json").write_text(json.dumps({**manifest, "format": "pv-other-shards"}), encoding="utf-8")
    out["refusals_naming"] = 0
    for bad, named in ((empty, "manifest.json"), (other, "'pv-other-shards'")):
        try:
            load_shards(bad)
        except ValueError as exc:
            out["refusals_naming"] += str(bad) in str(exc) and named in str(exc)
    return out


# Templates no label split can trust: one that numbers the conversation first (each turn changes
# the tokens before it) and one that drops the assistant's turns and opens none (a reply is empty).
UNSPLITTABLE_TEMPLATES = {
    "counting": "{{ messages | length }}\n" + CHAT_TEMPLATE,
    "silent": "{% for m in messages %}{% if m['role'] != 'assistant' %}<|im_start|>{{ m['role'] }}\n"
    "{{ m['content'] }}<|im_end|>\n{% endif %}{% endfor %}",
}


@checker(observes=["requests", "refused_naming"], ids=["FALSIFY-DATA-004"])
def chat_refuses_what_it_cannot_split(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """engine.data.chat_tokens on conversations its template cannot split into turns (see
    UNSPLITTABLE_TEMPLATES) and on one that opens with the assistant: each is a ValueError that
    says why, never labels guessed at."""

    def with_template(template: str) -> EngineTokenizer:
        tok = EngineTokenizer.from_json(engine_tokenizer.to_json())
        tok.chat_template = template
        return tok

    conversation = [dict(m) for m in CONVERSATIONS[1]]  # user, assistant, user, assistant
    unsplit = "the chat template does not render this conversation turn by turn"
    requests = [
        (conversation, with_template(UNSPLITTABLE_TEMPLATES["counting"]), unsplit),
        (conversation, with_template(UNSPLITTABLE_TEMPLATES["silent"]), unsplit),
        (
            conversation[1:],
            with_template(CHAT_TEMPLATE),
            "a conversation cannot start with the assistant",
        ),
    ]
    refused = 0
    for messages, tok, message in requests:
        try:
            chat_tokens(messages, tok)
        except ValueError as exc:
            refused += str(exc) == message  # word for word
    return {"requests": len(requests), "refused_naming": refused}


@checker(
    observes=["conversations", "id_mismatches", "learned_turns", "learned_mismatches", "lengths_differing"],
    ids=["FALSIFY-DATA-002"],
)
def chat_learns_the_replies(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """engine.data.chat_tokens on two conversations (a system turn; two assistant turns) with the
    engine's tokenizer and a ChatML template: the ids are the tokenizer backend's for the
    conversation Jinja2 renders, and the labelled tokens, taken run by run, decode to exactly each
    assistant reply followed by the template's end of turn."""

    tokenizer = EngineTokenizer.from_json(engine_tokenizer.to_json())
    tokenizer.chat_template = CHAT_TEMPLATE
    backend = tokenizer.backend
    out: dict[str, Any] = dict.fromkeys(
        ("id_mismatches", "learned_turns", "learned_mismatches", "lengths_differing"), 0
    )
    out["conversations"] = len(CONVERSATIONS)
    for conversation in CONVERSATIONS:
        messages = [dict(m) for m in conversation]
        ids, labels = chat_tokens(messages, tokenizer)
        out["lengths_differing"] += len(ids) != len(labels)
        reference = backend.encode(render(messages, False), add_special_tokens=False).ids
        out["id_mismatches"] += ids != reference
        runs: list[list[int]] = []
        for i, label in enumerate(labels):
            if label == IGNORE_INDEX:
                continue
            if runs and i > 0 and labels[i - 1] != IGNORE_INDEX:
                runs[-1].append(label)
            else:
                runs.append([label])
        replies = [m["content"] + END_OF_TURN for m in messages if m["role"] == "assistant"]
        out["learned_turns"] += len(runs)
        learned = [backend.decode(run, skip_special_tokens=False) for run in runs]
        out["learned_mismatches"] += sum(a != b for a, b in zip(learned, replies, strict=False))
        out["learned_mismatches"] += abs(len(learned) - len(replies))
    return out


PAIRS: tuple[tuple[str, str, str], ...] = (
    ("Add two numbers.", "def add(a, b):\n    return a + b", "math.py"),
    ('Say "hi" in French, with a tab\tand a backslash \\.', "« Salut » — ça va ?", ""),
    ("Empty source", "   leading spaces kept", "docs/ünïcode.md"),
)
# (a row as a user writes it, why it is malformed); the blank lines between rows count as lines
MALFORMED: tuple[tuple[str, str], ...] = (
    ("{not json", "not JSON"),
    ('["prompt", "response"]', "a JSON array"),
    ('{"prompt": "p"}', "no response"),
    ('{"messages": []}', "an empty conversation"),
    ('{"messages": "hello"}', "a conversation that is text"),
    ('{"messages": [{"role": "robot", "content": "x"}, {"role": "assistant", "content": "y"}]}', "an unknown role"),
    ('{"messages": [{"role": "user", "content": 3}, {"role": "assistant", "content": "y"}]}', "content not text"),
    ('{"messages": [{"role": "user", "content": "x"}]}', "no assistant turn"),
    ('{"messages": [{"role": "assistant", "content": "y"}, {"role": "user", "content": "x"}]}', "assistant first"),
    ('{"messages": ["user: x"]}', "a message that is not a mapping"),
)


@checker(
    observes=["rows_written", "file_mismatches", "examples_read", "example_mismatches", "malformed", "refused_at_line"],
    ids=["FALSIFY-DATA-003"],
)
def examples_read_as_written(tmp_path: Path) -> dict[str, Any]:
    """write_jsonl's file against the JSON lines written out here, read_jsonl and read_examples
    against what was written (pairs and chats, blank lines between), and each malformed row
    refused with a ValueError naming its file and line."""

    work = fresh_dir(tmp_path, "examples-")
    pairs = [InstructionPair(*p) for p in PAIRS]
    path = write_jsonl(pairs, work / "sub" / "dir" / "pairs.jsonl")  # two folders that do not exist yet
    expected_text = "".join(
        json.dumps({"prompt": p, "response": r, "source": s}, sort_keys=True, ensure_ascii=False) + "\n"
        for p, r, s in PAIRS
    )
    out: dict[str, Any] = {"rows_written": len(path.read_text(encoding="utf-8").splitlines())}
    out["file_mismatches"] = int(path.read_bytes() != expected_text.encode("utf-8"))
    again = write_jsonl(pairs[:1], path.with_name("again.jsonl"))  # into the folder now there
    out["file_mismatches"] += again.read_bytes() != expected_text.splitlines(keepends=True)[0].encode("utf-8")
    mismatches = sum(
        (got.prompt, got.response, got.source) != want for got, want in zip(read_jsonl(path), PAIRS, strict=False)
    ) + abs(len(read_jsonl(path)) - len(PAIRS))
    mixed = work / "mixed.jsonl"
    chats = [
        {"messages": list(CONVERSATIONS[0]), "source": "chat-1"},
        {"messages": list(CONVERSATIONS[1])},
    ]
    rows = [json.dumps({"prompt": PAIRS[0][0], "response": PAIRS[0][1]}), "", json.dumps(chats[0]), "   "]
    rows += [json.dumps(chats[1]), json.dumps({"prompt": PAIRS[1][0], "response": PAIRS[1][1], "source": "s"})]
    mixed.write_text("\n".join(rows) + "\n", encoding="utf-8")
    got = read_examples(mixed)
    want: list[Any] = [
        ("pair", PAIRS[0][0], PAIRS[0][1], ""),
        ("chat", tuple((m["role"], m["content"]) for m in CONVERSATIONS[0]), "chat-1"),
        ("chat", tuple((m["role"], m["content"]) for m in CONVERSATIONS[1]), ""),
        ("pair", PAIRS[1][0], PAIRS[1][1], "s"),
    ]
    seen: list[Any] = [
        ("pair", e.prompt, e.response, e.source) if isinstance(e, InstructionPair) else ("chat", e.messages, e.source)
        for e in got
    ]
    mismatches += sum(a != b for a, b in zip(seen, want, strict=False)) + abs(len(seen) - len(want))
    mismatches += sum(
        e.as_messages() != list(c)
        for e, c in zip([e for e in got if isinstance(e, ChatExample)], CONVERSATIONS, strict=False)
    )
    out["examples_read"] = len(got)
    out["example_mismatches"] = mismatches
    refused = 0
    cases = [(row, None) for row, _ in MALFORMED] + [(json.dumps(chats[0]), False)]  # a chat where pairs are due
    for k, (row, chats_allowed) in enumerate(cases):
        bad = work / f"bad-{k}.jsonl"
        line = 3 + k % 3  # the malformed row after good rows and blank lines
        good = [json.dumps({"prompt": "p", "response": "r"})] + [""] * (line - 2)
        bad.write_text("\n".join([*good, row, json.dumps({"prompt": "q", "response": "s"})]) + "\n", encoding="utf-8")
        try:
            if chats_allowed is False:
                read_jsonl(bad)
            else:
                read_examples(bad)
        except ValueError as exc:
            refused += str(exc).startswith(f"{bad}:{line}: ")
    out["malformed"] = len(cases)
    out["refused_at_line"] = refused
    return out
