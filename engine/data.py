"""Training data from local sources only: token shards for pretraining, instruction pairs for fine-tuning.

Pretraining text is the tokenizer's own corpus (a slice of the Python standard library).  Each
document is tokenized as ``bos + text + eos`` and split at 90 % of its tokens: the head goes to
train, the tail to validation, so both see every document's style.  Batches are a pure function
of ``(seed, step)``: the stream is cut into ``seq_len`` windows, every epoch visits them in a
permutation drawn from ``seed`` and the epoch number, ``torch.randperm(n,
generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))``, never from torch's global
generator, and batch ``step`` takes the next ``batch_size`` windows (instruction rows likewise).
Resuming at a step therefore needs nothing but the step.

Instruction pairs are ``(prompt = docstring, response = function body)`` extracted with ``ast``
from the same standard-library files, written as JSONL.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from engine.atomic import write_atomic
from engine.chat import check_messages
from engine.corpus import CorpusFile, as_corpus_files, default_corpus_files, read_corpus
from engine.errors import TokenizerError
from engine.faults import FAULTS
from engine.safetensors_io import save_tensors
from engine.tokenizer import EngineTokenizer

SHARD_FORMAT = "pv-engine-token-shards"
IGNORE_INDEX = -100
DEFAULT_VAL_FRACTION = 0.1


def _digest_tokens(tokens: torch.Tensor) -> str:
    return hashlib.sha256(tokens.to(torch.int32).contiguous().numpy().tobytes()).hexdigest()


@dataclass(frozen=True)
class TokenData:
    """A train and a validation token stream (1-D int64) plus where they came from."""

    train: torch.Tensor
    val: torch.Tensor
    vocab_size: int
    digest: str

    def num_windows(self, seq_len: int, split: str = "train") -> int:
        stream = self.train if split == "train" else self.val
        return int(stream.numel() // seq_len)

    def windows(self, seq_len: int, split: str = "train") -> torch.Tensor:
        stream = self.train if split == "train" else self.val
        n = self.num_windows(seq_len, split)
        if n == 0:
            raise ValueError(f"the {split} stream has {stream.numel()} tokens, fewer than one window of {seq_len}")
        return stream[: n * seq_len].view(n, seq_len)

    def batch(self, step: int, batch_size: int, seq_len: int, seed: int) -> torch.Tensor:
        """Training batch number ``step`` ([batch_size, seq_len] token ids), deterministic."""
        windows = self.windows(seq_len)
        n = windows.size(0)
        rows = []
        for i in range(step * batch_size, (step + 1) * batch_size):
            epoch, pos = divmod(i, n)
            rows.append(int(_epoch_permutation(seed, epoch, n)[pos]))
        return windows[rows]

    def val_batches(self, batch_size: int, seq_len: int, max_batches: int) -> list[torch.Tensor]:
        """The fixed validation set: the first ``max_batches`` batches of consecutive windows."""
        windows = self.windows(seq_len, "val")
        out = [windows[i : i + batch_size] for i in range(0, windows.size(0), batch_size)]
        return out[:max_batches]


_PERM_CACHE: dict[tuple[int, int, int], torch.Tensor] = {}


def clear_caches() -> None:
    """Forget the cached epoch permutations; the next epoch draws its order again."""
    _PERM_CACHE.clear()


def _epoch_permutation(seed: int, epoch: int, n: int) -> torch.Tensor:
    key = (seed, epoch, n)
    perm = _PERM_CACHE.get(key)
    if perm is None:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        if FAULTS.active("data_order_from_global_rng"):  # pragma: no mutate
            gen = torch.default_generator  # pragma: no mutate -- the defect: the order follows the global one
        perm = torch.randperm(n, generator=gen)
        if len(_PERM_CACHE) > 64:
            _PERM_CACHE.clear()
        _PERM_CACHE[key] = perm
    return perm


def tokenize_corpus(
    tokenizer: EngineTokenizer,
    files: Iterable[str | Path | CorpusFile] | None = None,
    val_fraction: float = DEFAULT_VAL_FRACTION,
) -> TokenData:
    """Tokenize the corpus (default: the tokenizer's stdlib slice) into train/val streams."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    corpus = default_corpus_files() if files is None else as_corpus_files(files)
    if FAULTS.active("user_corpus_ignored"):  # pragma: no mutate
        corpus = default_corpus_files()  # pragma: no mutate -- the defect: the files named are not read
    train_parts: list[torch.Tensor] = []
    val_parts: list[torch.Tensor] = []
    for text in read_corpus(corpus):
        ids = torch.tensor(tokenizer.encode(text, add_bos=True, add_eos=True), dtype=torch.int64)
        cut = round(ids.numel() * (1.0 - val_fraction))
        train_parts.append(ids[:cut])
        val_parts.append(ids[cut:])
    train = torch.cat(train_parts) if train_parts else torch.empty(0, dtype=torch.int64)
    val = torch.cat(val_parts) if val_parts else torch.empty(0, dtype=torch.int64)
    digest = hashlib.sha256((_digest_tokens(train) + _digest_tokens(val)).encode()).hexdigest()
    return TokenData(train, val, tokenizer.vocab_size, digest)


def write_shards(data: TokenData, out_dir: str | os.PathLike[str], shard_tokens: int = 1 << 20) -> Path:
    """Write the streams as int32 safetensors shards plus ``manifest.json`` (sorted, digest-checked)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[str]] = {}
    for split, stream in (("train", data.train), ("val", data.val)):
        names = []
        end = max(stream.numel(), 1)
        if FAULTS.active("shards_last_partial_dropped"):
            end = max(stream.numel() - shard_tokens + 1, 1)  # pragma: no mutate
        for i, start in enumerate(range(0, end, shard_tokens)):
            name = f"{split}-{i:05d}.safetensors"
            chunk = stream[start : start + shard_tokens].to(torch.int32).contiguous()
            save_tensors({"tokens": chunk}, str(out / name), metadata={"format": SHARD_FORMAT, "split": split})
            names.append(name)
        files[split] = names
    manifest = {
        "format": SHARD_FORMAT,
        "vocab_size": data.vocab_size,
        "digest": data.digest,
        "tokens": {"train": int(data.train.numel()), "val": int(data.val.numel())},
        "files": files,
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out


def load_shards(directory: str | os.PathLike[str]) -> TokenData:
    """Read shards written by :func:`write_shards`; the digest is recomputed and must match."""
    folder = Path(directory)
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{folder}: no readable manifest.json ({exc})") from None
    if manifest.get("format") != SHARD_FORMAT:
        raise ValueError(f"{folder}/manifest.json: format {manifest.get('format')!r} is not {SHARD_FORMAT}")
    streams = {}
    for split in ("train", "val"):
        parts = [load_file(str(folder / name))["tokens"].to(torch.int64) for name in manifest["files"][split]]
        streams[split] = torch.cat(parts) if parts else torch.empty(0, dtype=torch.int64)
    digest = hashlib.sha256((_digest_tokens(streams["train"]) + _digest_tokens(streams["val"])).encode()).hexdigest()
    if digest != manifest["digest"]:
        raise ValueError(f"{folder}: token shards do not match the manifest digest (modified or truncated)")
    return TokenData(streams["train"], streams["val"], int(manifest["vocab_size"]), digest)


# --- instruction pairs -----------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionPair:
    prompt: str
    response: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"prompt": self.prompt, "response": self.response, "source": self.source}


def _string_continuations(text: str) -> set[int]:
    """Line numbers (1-based) that continue a multi-line string literal of ``text``: their text is
    the string's own, so no indentation is taken from them."""
    rows: set[int] = set()
    opened: list[int] = []  # rows of the f-strings open (tokenized in parts from Python 3.12)
    fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -1)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
            elif tok.type == fstring_start:
                opened.append(tok.start[0])
            elif tok.type == fstring_end and opened:
                rows.update(range(opened.pop() + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return rows


def _body_source(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str], inside: set[int]) -> str | None:
    """The function's statements after its docstring, as source at the left margin: from the first
    statement's column (a one-line ``def f(): "doc"; return 1`` gives ``return 1``) to the end of
    the last statement's line, each further line less the body's indentation, except the lines
    inside a multi-line string, whose text is the string's."""
    body = node.body[1:]  # the first statement is the docstring
    if not body:
        return None
    first, last = body[0], body[-1]
    indent = first.col_offset
    out = [lines[first.lineno - 1][indent:]]
    if FAULTS.active("pair_body_from_line_start"):  # the defect: the first line taken whole, def and all
        out = [lines[first.lineno - 1].lstrip()]  # pragma: no mutate
    for n in range(first.lineno + 1, (last.end_lineno or last.lineno) + 1):
        line = lines[n - 1]
        if n in inside:
            out.append(line)
        elif not line.strip():
            out.append("\n")
        else:
            kept = line[indent:] if line[:indent].isspace() else line.lstrip()
            if FAULTS.active("pair_continuation_cut_at_margin"):  # the defect: a line left of the margin loses text
                kept = line[indent:]  # pragma: no mutate
            out.append(kept)
    chunk = "".join(out).rstrip()
    return chunk if chunk.strip() else None


def extract_pairs_from_source(text: str, module: str) -> Iterator[InstructionPair]:
    """(docstring, body) pairs of every documented function in ``text``: the module's functions in
    source order, then each class's methods (breadth first); functions nested in a function are part
    of its body, not pairs of their own."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    lines = text.splitlines(keepends=True)
    inside = _string_continuations(text)
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop(0)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                stack.append((child, f"{prefix}{child.name}."))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(child)
                body = _body_source(child, lines, inside)
                if doc and body:
                    yield InstructionPair(doc.strip(), body, f"{module}:{prefix}{child.name}")


def extract_instruction_pairs(
    files: Iterable[str | Path | CorpusFile] | None = None,
    *,
    max_pairs: int | None = None,
    max_chars: int = 2000,
) -> list[InstructionPair]:
    """Docstring → body pairs from the corpus files (default: the tokenizer's stdlib slice).

    Pairs whose prompt or response is longer than ``max_chars`` are left out (they would not fit
    a small model's context anyway); order is file order, then source order.
    """
    corpus = default_corpus_files() if files is None else as_corpus_files(files)
    pairs: list[InstructionPair] = []
    for f in corpus:
        text = f.path.read_text(encoding="utf-8", errors="replace")  # whole files: a cut breaks parsing
        for pair in extract_pairs_from_source(text, f.path.stem):
            if len(pair.prompt) <= max_chars and len(pair.response) <= max_chars:
                pairs.append(pair)
                if max_pairs is not None and len(pairs) >= max_pairs:
                    return pairs
    return pairs


def write_jsonl(pairs: Iterable[InstructionPair], path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(p.to_dict(), sort_keys=True, ensure_ascii=False) + "\n" for p in pairs)
    write_atomic(out, text)
    return out


def read_jsonl(path: str | os.PathLike[str]) -> list[InstructionPair]:
    """The instruction pairs :func:`write_jsonl` wrote (a chat row is an error naming its line)."""
    return [e for e in read_examples(path, chats=False) if isinstance(e, InstructionPair)]


PROMPT_TEMPLATE = "### Docstring\n{prompt}\n### Code\n"
# How an example becomes tokens: "docstring" puts a pair in PROMPT_TEMPLATE (the engine's own
# pretrained models know nothing else); "chat" renders it as a user turn and an assistant turn through
# the checkpoint's chat template and learns the assistant's tokens only; "auto" is chat when the
# checkpoint has a chat template, else docstring.
TEMPLATES = ("auto", "chat", "docstring")


@dataclass(frozen=True)
class ChatExample:
    """One conversation of a chat JSONL row ``{"messages": [{"role": ..., "content": ...}, ...]}``."""

    messages: tuple[tuple[str, str], ...]  # (role, content) in order
    source: str = ""

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


def read_examples(path: str | os.PathLike[str], *, chats: bool = True) -> list[InstructionPair | ChatExample]:
    """Instruction pairs (``prompt``/``response``) and, with ``chats``, chat conversations
    (``messages``), in file order; a malformed row is a ValueError naming its line."""

    out: list[InstructionPair | ChatExample] = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if FAULTS.active("examples_line_numbers_skip_blanks"):  # the defect: errors count rows, not lines
        lines = [line for line in lines if line.strip()]  # pragma: no mutate
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row: dict[str, Any] = json.loads(line)
            if isinstance(row, dict) and "messages" in row:
                if not chats:
                    raise ValueError("a chat conversation where instruction pairs are expected")
                checked = check_messages(row["messages"])
                if not any(m["role"] == "assistant" for m in checked):
                    raise ValueError("no assistant message to learn")
                if checked[0]["role"] == "assistant":
                    raise ValueError("the conversation starts with the assistant")
                msgs = tuple((m["role"], m["content"]) for m in checked)
                out.append(ChatExample(msgs, str(row.get("source", ""))))
            else:
                out.append(InstructionPair(str(row["prompt"]), str(row["response"]), str(row.get("source", ""))))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, TokenizerError) as exc:
            raise ValueError(
                f"{path}:{n}: not an instruction pair or a chat conversation ({exc}); a row is "
                '{"prompt": ..., "response": ...} or {"messages": [{"role": "user", "content": ...}, ...]}'
            ) from None
    return out


def resolve_template(template: str, tokenizer: EngineTokenizer) -> str:
    if template not in TEMPLATES:
        raise ValueError(f"unknown template {template!r}; expected one of {', '.join(TEMPLATES)}")
    if template == "auto":
        return "chat" if tokenizer.chat_template is not None else "docstring"
    if template == "chat" and tokenizer.chat_template is None:
        if FAULTS.active("chat_template_absence_unchecked"):  # the defect: refused later, by the renderer
            return template  # pragma: no mutate
        raise ValueError("template chat: the checkpoint's tokenizer has no chat template (use --template docstring)")
    return template


def chat_tokens(messages: Sequence[Mapping[str, str]], tokenizer: EngineTokenizer) -> tuple[list[int], list[int]]:
    """(ids, labels) of a conversation rendered by the checkpoint's template: labels hold the
    tokens of each assistant turn as the template closes it (its content and end-of-turn tokens)
    and IGNORE_INDEX everywhere else (system, user and the template's own tokens).

    Each assistant turn is located by rendering the conversation up to it twice: with the
    assistant's opening (``add_generation_prompt``) and with the turn itself.  A template that
    does not render a conversation as a sequence of turns (a later turn changing earlier tokens)
    is refused rather than guessed at."""
    msgs = [dict(m) for m in messages]
    full = tokenizer.apply_chat_template(msgs, add_generation_prompt=False)
    labels = [IGNORE_INDEX] * len(full)
    for k, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        if k == 0:
            raise ValueError("a conversation cannot start with the assistant")
        before = tokenizer.apply_chat_template(msgs[:k], add_generation_prompt=True)
        upto = tokenizer.apply_chat_template(msgs[: k + 1], add_generation_prompt=False)
        split = full[: len(before)] == before and full[: len(upto)] == upto and len(upto) > len(before)
        if not split and not FAULTS.active("chat_turn_check_skipped"):  # the defect: labels from a broken split
            raise ValueError("the chat template does not render this conversation turn by turn")
        if FAULTS.active("chat_loss_on_prompt"):  # the defect: the prompt's tokens are learned too
            labels[: len(upto)] = full[: len(upto)]  # pragma: no mutate
        else:
            labels[len(before) : len(upto)] = full[len(before) : len(upto)]
    return full, labels


@dataclass(frozen=True)
class InstructionData:
    """Tokenized pairs: ``input_ids`` [n, seq_len] right-padded, ``labels`` masked on prompt and pad."""

    input_ids: torch.Tensor
    labels: torch.Tensor
    val_input_ids: torch.Tensor
    val_labels: torch.Tensor
    digest: str

    def batch(self, step: int, batch_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.input_ids.size(0)
        rows = []
        for i in range(step * batch_size, (step + 1) * batch_size):
            epoch, pos = divmod(i, n)
            rows.append(int(_epoch_permutation(seed, epoch, n)[pos]))
        return self.input_ids[rows], self.labels[rows]

    def val_batches(self, batch_size: int, max_batches: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        out = []
        for i in range(0, self.val_input_ids.size(0), batch_size):
            out.append((self.val_input_ids[i : i + batch_size], self.val_labels[i : i + batch_size]))
        return out[:max_batches]


def tokenize_pairs(
    pairs: Sequence[InstructionPair | ChatExample],
    tokenizer: EngineTokenizer,
    seq_len: int,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    template: str = "docstring",
) -> InstructionData:
    """Encode each example, truncate to ``seq_len``, learn only the response.

    ``template`` (:data:`TEMPLATES`): "docstring" encodes ``bos + PROMPT_TEMPLATE(prompt) +
    response + eos``; "chat" renders a pair as a user and an assistant turn, or a conversation as
    it is, through the tokenizer's chat template and learns the assistant turns only
    (:func:`chat_tokens`).  Every ``round(1/val_fraction)``-th example goes to validation (the last
    one when there are fewer), and no validation example is trained on.
    Examples whose prompt alone fills the window carry no response tokens and are dropped; padding
    is never learned.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    chosen = resolve_template(template, tokenizer)
    rows: list[tuple[list[int], list[int]]] = []
    for p in pairs:
        if chosen == "chat":
            messages = (
                p.as_messages()
                if isinstance(p, ChatExample)
                else [{"role": "user", "content": p.prompt}, {"role": "assistant", "content": p.response}]
            )
            full, full_labels = chat_tokens(messages, tokenizer)
            ids, labels = full[:seq_len], full_labels[:seq_len]
        elif isinstance(p, ChatExample):
            raise ValueError("a chat conversation needs the chat template (--template chat)")
        else:
            prompt = tokenizer.encode(PROMPT_TEMPLATE.format(prompt=p.prompt), add_bos=True)
            response = tokenizer.encode(p.response, add_eos=True)
            ids = (prompt + response)[:seq_len]
            labels = ([IGNORE_INDEX] * len(prompt) + response)[:seq_len]
        if all(t == IGNORE_INDEX for t in labels[1:]):
            continue
        pad = seq_len - len(ids)
        rows.append((ids + [tokenizer.pad_id] * pad, labels + [IGNORE_INDEX] * pad))
    if len(rows) < 2:
        raise ValueError(f"only {len(rows)} usable instruction pair(s) at seq_len {seq_len}; need at least 2")
    every = max(2, round(1 / val_fraction))
    train = [r for i, r in enumerate(rows) if i % every != every - 1]
    val = [r for i, r in enumerate(rows) if i % every == every - 1]
    if not val:  # fewer examples than every: the last one is held out, never trained on as well
        val = rows[-1:]
        # the defect: the first example is held out (and still trained on), not the last
        if FAULTS.active("few_pairs_hold_out_first"):  # pragma: no mutate
            val = rows[:1]  # pragma: no mutate
        if not FAULTS.active("val_example_also_trained"):  # the defect: validation scores a training example
            train = rows[:-1]
    ids_t = torch.tensor([r[0] for r in train], dtype=torch.int64)
    lab_t = torch.tensor([r[1] for r in train], dtype=torch.int64)
    vids = torch.tensor([r[0] for r in val], dtype=torch.int64)
    vlab = torch.tensor([r[1] for r in val], dtype=torch.int64)
    digest = hashlib.sha256(b"".join(_digest_tokens(t).encode() for t in (ids_t, lab_t, vids, vlab))).hexdigest()
    return InstructionData(ids_t, lab_t, vids, vlab, digest)
