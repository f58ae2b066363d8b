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

from engine.tokenizer import EngineTokenizer
from falsifiers._workdir import fresh_dir
from falsifiers.files import CHAT_TEMPLATE
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
    ],
    ids=["FALSIFY-DATA-001"],
)
def shards_round_trip(tmp_path: Path, shard_tokens: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Write 4,321 train and 777 val tokens (vocab 50,000: beyond int16) as shards of
    ``shard_tokens``; read every shard with safe_open and the manifest with json, compare every
    field with the streams and the digest computed here, load them back, and change one token of
    one shard: loading must then refuse."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from engine.data import SHARD_FORMAT, TokenData, load_shards, write_shards

    gen = torch.Generator().manual_seed(seed)
    vocab = 50_000
    train = torch.randint(0, vocab, (4321,), generator=gen)
    val = torch.randint(0, vocab, (777,), generator=gen)
    data = TokenData(train, val, vocab, stream_digest(train, val))
    folder = write_shards(data, fresh_dir(tmp_path, "shards-") / "out", shard_tokens=shard_tokens)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
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
    extra = {p.name for p in folder.iterdir()} - {"manifest.json", *expected_files["train"], *expected_files["val"]}
    out["manifest_mismatches"] += len(extra)
    try:
        back = load_shards(folder)
        out["round_trip_equal"] = int(
            torch.equal(back.train, train) and torch.equal(back.val, val) and back.vocab_size == vocab
        )
    except ValueError:  # the untouched shards refused: they are not what was written
        out["round_trip_equal"] = 0
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
    return out


def render(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """The template as transformers renders it: Jinja2's immutable sandbox, trim and lstrip blocks."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, add_generation_prompt=add_generation_prompt)


@checker(
    observes=["conversations", "id_mismatches", "learned_turns", "learned_mismatches", "lengths_differing"],
    ids=["FALSIFY-DATA-002"],
)
def chat_learns_the_replies(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """engine.data.chat_tokens on two conversations (a system turn; two assistant turns) with the
    engine's tokenizer and a ChatML template: the ids are the tokenizer backend's for the
    conversation Jinja2 renders, and the labelled tokens, taken run by run, decode to exactly each
    assistant reply followed by the template's end of turn."""
    from engine.data import IGNORE_INDEX, chat_tokens

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
