"""The rows a fine-tune learns from, and the refusals of examples it cannot learn from.

``engine.data.tokenize_pairs`` turns examples into the padded ``input_ids``/``labels`` rows of
training and validation and the ``data_digest`` a run's manifest records.  Each row is compared
here with a reference built from the ``tokenizers`` backend and Jinja2 directly: the docstring
recipe as it is written out below, a chat conversation rendered the way transformers renders
templates, its assistant turns located by rendering the conversation up to each turn.  The split
(every ``round(1/val_fraction)``-th usable example to validation, the last one when there are
fewer, none of them trained on), the dtypes, the batches of ``val_batches`` and the digest's
formula are written out here too.

A refusal's message is what a user reads; each one is compared with the text written out here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.data import ChatExample, InstructionPair, read_examples, resolve_template, tokenize_pairs
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.chat_templates import CHAT_TEMPLATE
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

IGNORE = -100  # the label torch's cross_entropy skips
SEQ_LEN = 40
Row = tuple[list[int], list[int]]

# (docstring, code); the fifth's prompt alone fills SEQ_LEN, the third's response is cut
PAIRS: tuple[tuple[str, str], ...] = (
    ("Add two numbers.", "return a + b"),
    ("Negate.", "return -x"),
    ("Join the words with spaces, then upper-case them.", "return ' '.join(words).upper() if words else ''"),
    ("Square it.", "return x * x"),
    ("A docstring so long that, with the recipe's header and footer, it fills the whole window " * 2, "pass"),
    ("Halve.", "return x / 2"),
    ("Empty list.", "return []"),
    ("Identity.", "return x"),
    ("Second item.", "return xs[1]"),
    ("Last item.", "return xs[-1]"),
)
CONVERSATION = (
    {"role": "system", "content": "Answer with code."},
    {"role": "user", "content": "sum?"},
    {"role": "assistant", "content": "sum(xs)"},
    {"role": "user", "content": "max?"},
    {"role": "assistant", "content": "max(xs)"},
)
# A template that renders the assistant's turns alone: a reply of one token has nothing to learn
# after the first position (labels are shifted by one), a reply of two has one.
BARE_TEMPLATE = "{% for m in messages %}{% if m['role'] == 'assistant' %}{{ m['content'] }}{% endif %}{% endfor %}"


def render(template: str, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """A template as transformers renders it: Jinja2's immutable sandbox, trim and lstrip blocks."""

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt)


def docstring_row(backend: Any, tok: EngineTokenizer, prompt: str, response: str) -> Row:
    """bos, the recipe's header, the docstring and footer, then the code and eos; the code is learned."""
    head = [tok.bos_id, *backend.encode(f"### Docstring\n{prompt}\n### Code\n", add_special_tokens=False).ids]
    body = [*backend.encode(response, add_special_tokens=False).ids, tok.eos_id]
    return head + body, [IGNORE] * len(head) + body


def chat_row(backend: Any, template: str, messages: Sequence[dict[str, str]]) -> Row:
    """The conversation as Jinja2 renders it; each assistant turn, from the assistant's opening to
    the end of the turn, is learned."""

    def ids(msgs: Sequence[dict[str, str]], opening: bool) -> list[int]:
        return list(backend.encode(render(template, list(msgs), opening), add_special_tokens=False).ids)

    full = ids(messages, False)
    labels = [IGNORE] * len(full)
    for k, m in enumerate(messages):
        if m["role"] == "assistant":
            start, end = len(ids(messages[:k], True)), len(ids(messages[: k + 1], False))
            labels[start:end] = full[start:end]
    return full, labels


def fitted(rows: list[Row], tok: EngineTokenizer, seq_len: int) -> list[Row]:
    """Cut to seq_len, dropped when nothing past the first position is learned, padded with pad."""
    out = []
    for ids, labels in rows:
        ids, labels = ids[:seq_len], labels[:seq_len]
        if all(label == IGNORE for label in labels[1:]):
            continue
        pad = seq_len - len(ids)
        out.append((ids + [tok.pad_id] * pad, labels + [IGNORE] * pad))
    return out


def split(rows: list[Row], val_fraction: float) -> tuple[list[Row], list[Row]]:
    every = max(2, round(1 / val_fraction))
    held = [i for i in range(len(rows)) if i % every == every - 1] or [len(rows) - 1]
    return [r for i, r in enumerate(rows) if i not in held], [rows[i] for i in held]


def digest(train: list[Row], val: list[Row]) -> str:
    """sha256 over the hex sha256 of each int32 tensor: train ids, train labels, val ids, val labels."""
    parts = [[r[0] for r in train], [r[1] for r in train], [r[0] for r in val], [r[1] for r in val]]
    hexes = [hashlib.sha256(torch.tensor(p, dtype=torch.int32).numpy().tobytes()).hexdigest() for p in parts]
    return hashlib.sha256("".join(hexes).encode()).hexdigest()


def as_rows(ids: torch.Tensor, labels: torch.Tensor) -> list[Row]:
    return [(a, b) for a, b in zip(ids.tolist(), labels.tolist(), strict=True)]


@checker(
    observes=["cases", "rows_differing", "digests_differing", "dtypes", "val_batch_sizes", "trained_val_rows"],
    ids=["FALSIFY-DATA-007"],
)
def rows_as_the_recipe_writes_them(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """tokenize_pairs on five cases against the reference rows above: the docstring recipe (ten
    pairs, one too long to learn from, val_fraction 0.25), the same through template "auto" of a
    tokenizer without a chat template, three pairs at the default val_fraction (fewer than ten),
    pairs and a conversation through a ChatML template ("chat", and "auto" of a tokenizer that has
    one, val_fraction 0.5), and the bare template at seq_len 2."""

    plain = EngineTokenizer.from_json(engine_tokenizer.to_json())
    plain.chat_template = None
    chatml = EngineTokenizer.from_json(engine_tokenizer.to_json())
    chatml.chat_template = CHAT_TEMPLATE
    bare = EngineTokenizer.from_json(engine_tokenizer.to_json())
    bare.chat_template = BARE_TEMPLATE
    backend = engine_tokenizer.backend
    pairs = [InstructionPair(p, r, "") for p, r in PAIRS]
    conversation = ChatExample(tuple((m["role"], m["content"]) for m in CONVERSATION))

    def as_chat(p: InstructionPair | ChatExample) -> list[dict[str, str]]:
        if isinstance(p, ChatExample):
            return p.as_messages()
        return [{"role": "user", "content": p.prompt}, {"role": "assistant", "content": p.response}]

    docstring_rows = [docstring_row(backend, plain, p, r) for p, r in PAIRS]
    mixed: list[InstructionPair | ChatExample] = [*pairs[:3], conversation, *pairs[5:8]]
    replies = [ChatExample((("user", "a"), ("assistant", word))) for word in ("x", "return a", "pass x", "x = 1")]
    chat_rows = [chat_row(backend, CHAT_TEMPLATE, as_chat(p)) for p in mixed]
    cases: list[tuple[Any, list[Row], float, int]] = [
        (lambda: tokenize_pairs(pairs, plain, SEQ_LEN, 0.25), docstring_rows, 0.25, SEQ_LEN),
        (lambda: tokenize_pairs(pairs, plain, SEQ_LEN, 0.25, template="auto"), docstring_rows, 0.25, SEQ_LEN),
        (lambda: tokenize_pairs(pairs[:3], plain, SEQ_LEN), docstring_rows[:3], 0.1, SEQ_LEN),
        (lambda: tokenize_pairs(mixed, chatml, 2 * SEQ_LEN, 0.5, template="chat"), chat_rows, 0.5, 2 * SEQ_LEN),
        (lambda: tokenize_pairs(mixed, chatml, 2 * SEQ_LEN, 0.5, template="auto"), chat_rows, 0.5, 2 * SEQ_LEN),
        (
            lambda: tokenize_pairs(replies, bare, 2, 0.5, template="chat"),
            [chat_row(backend, BARE_TEMPLATE, as_chat(p)) for p in replies],
            0.5,
            2,
        ),
    ]
    out: dict[str, Any] = {"cases": len(cases), "rows_differing": 0, "digests_differing": 0, "trained_val_rows": 0}
    out["dtypes"] = set()
    out["val_batch_sizes"] = []
    for call, raw, fraction, seq_len in cases:
        want_train, want_val = split(fitted(raw, plain, seq_len), fraction)
        data = call()
        got_train, got_val = as_rows(data.input_ids, data.labels), as_rows(data.val_input_ids, data.val_labels)
        out["rows_differing"] += sum(a != b for a, b in zip(got_train + got_val, want_train + want_val, strict=False))
        out["rows_differing"] += abs(len(got_train) - len(want_train)) + abs(len(got_val) - len(want_val))
        out["digests_differing"] += data.digest != digest(want_train, want_val)
        out["trained_val_rows"] += sum(row in got_train for row in got_val)
        out["dtypes"] |= {str(t.dtype) for t in (data.input_ids, data.labels, data.val_input_ids, data.val_labels)}
        batches = data.val_batches(2, 10)
        out["val_batch_sizes"].append([int(b[0].size(0)) for b in batches])
        out["rows_differing"] += sum(
            as_rows(ids, labels) != want_val[2 * i : 2 * i + 2] for i, (ids, labels) in enumerate(batches)
        )
        out["val_batch_sizes"].append([int(b[0].size(0)) for b in data.val_batches(1, 1)])
    out["dtypes"] = sorted(out["dtypes"])
    return out


ROW_HINT = '{"prompt": ..., "response": ...} or {"messages": [{"role": "user", "content": ...}, ...]}'


@checker(observes=["refusals", "messages_differing", "differing"], ids=["FALSIFY-DATA-008"])
def refusals_say_what_to_do(tmp_path: Path, engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """Each example or setting tokenize_pairs, resolve_template or read_examples cannot use is a
    ValueError whose message is exactly the one written out here."""

    plain = EngineTokenizer.from_json(engine_tokenizer.to_json())
    plain.chat_template = None
    pairs = [InstructionPair(p, r, "") for p, r in PAIRS]
    chat = ChatExample((("user", "sum?"), ("assistant", "sum(xs)")))
    work = fresh_dir(tmp_path, "refusals-")
    rows = {
        "chats.jsonl": (json.dumps({"messages": list(CONVERSATION)}), {"chats": False}),
        "silent.jsonl": (json.dumps({"messages": [{"role": "user", "content": "x"}]}), {}),
        "first.jsonl": (json.dumps({"messages": list(CONVERSATION[2:])}), {}),
    }
    reasons = {
        "chats.jsonl": "a chat conversation where instruction pairs are expected",
        "silent.jsonl": "no assistant message to learn",
        "first.jsonl": "the conversation starts with the assistant",
    }
    for name, (row, _) in rows.items():
        (work / name).write_text(json.dumps({"prompt": "p", "response": "r"}) + "\n\n" + row + "\n", encoding="utf-8")
    no_template = "template chat: the checkpoint's tokenizer has no chat template (use --template docstring)"
    requests: list[tuple[Any, str]] = [
        (lambda: resolve_template("chat", plain), no_template),
        (lambda: tokenize_pairs(pairs, plain, SEQ_LEN, template="chat"), no_template),
        (lambda: resolve_template("jinja", plain), "unknown template 'jinja'; expected one of auto, chat, docstring"),
        (
            lambda: tokenize_pairs([*pairs, chat], plain, SEQ_LEN),
            "a chat conversation needs the chat template (--template chat)",
        ),
        (
            lambda: tokenize_pairs(pairs[4:6], plain, SEQ_LEN),  # the first's prompt fills the window
            "only 1 usable instruction pair(s) at seq_len 40; need at least 2",
        ),
        *(
            (lambda f=f: tokenize_pairs(pairs, plain, SEQ_LEN, f), f"val_fraction must be in (0, 1), got {f}")
            for f in (0.0, 1.0, 1.5)
        ),
        *(
            (
                lambda name=name, kw=kw: read_examples(work / name, **kw),
                f"{work / name}:3: not an instruction pair or a chat conversation ({reasons[name]}); "
                f"a row is {ROW_HINT}",
            )
            for name, (_, kw) in rows.items()
        ),
    ]
    differing = refusals_differing((call, ValueError, message) for call, message in requests)
    return {"refusals": len(requests), "messages_differing": len(differing), "differing": differing}
