"""Byte-level BPE tokenizer (Hugging Face ``tokenizers``) with ``<|bos|>``, ``<|eos|>``, ``<|pad|>``.

Training is deterministic: the same corpus and vocabulary size give byte-identical tokenizer JSON.
The special tokens always take ids 0 (bos), 1 (eos) and 2 (pad); the 256 byte symbols follow, then
the merges, of pairs that occur at least twice (``MIN_PAIR_FREQUENCY``).  Byte-level
pre-tokenization means every UTF-8 string encodes and decodes back to itself, with no unknown token.

Trained tokenizers are cached in ``$PV_ENGINE_CACHE`` (default ``~/.cache/pv-engine``) under
``tokenizers/bpe-v<vocab>-<corpus digest>-<training digest>.json``, so tests and runs reuse one
instead of retraining; the training digest (:func:`training_digest`) changes with anything else
that decides what training gives, so an entry an older trainer wrote is never read as this one's.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from engine.atomic import write_atomic
from engine.chat import render_chat
from engine.corpus import CorpusFile, as_corpus_files, corpus_digest, read_corpus
from engine.corpus import default_corpus_files as default_corpus_files
from engine.errors import TokenizerError
from engine.faults import FAULTS

BOS_TOKEN = "<|bos|>"
EOS_TOKEN = "<|eos|>"
PAD_TOKEN = "<|pad|>"
SPECIAL_TOKENS: tuple[str, str, str] = (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN)
JSON_FORMAT = "pv-engine-tokenizer"
JSON_VERSION = 1
MIN_VOCAB_SIZE = 256 + len(SPECIAL_TOKENS)
MIN_PAIR_FREQUENCY = 2  # training merges a pair only when it occurs at least this often
CACHE_ENV = "PV_ENGINE_CACHE"


class EngineTokenizer:
    """A ``tokenizers.Tokenizer`` plus the roles of its special tokens."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        bos_token: str = BOS_TOKEN,
        eos_token: str = EOS_TOKEN,
        pad_token: str = PAD_TOKEN,
        *,
        add_bos_token: bool = True,
        chat_template: str | None = None,
    ) -> None:
        ids: dict[str, int] = {}
        for role, token in (("bos", bos_token), ("eos", eos_token), ("pad", pad_token)):
            tid = tokenizer.token_to_id(token)
            if tid is None:
                raise TokenizerError(f"{role} token {token!r} is not in the tokenizer's vocabulary")
            ids[role] = tid
        self._tok = tokenizer
        self.bos_token, self.eos_token, self.pad_token = bos_token, eos_token, pad_token
        self.bos_id, self.eos_id, self.pad_id = ids["bos"], ids["eos"], ids["pad"]
        # The tokenizer's own rule, as its authors set it (GGUF `add_bos_token`, HF tokenizer_config):
        # engine-trained tokenizers start every sequence with BOS; SmolLM2 or Qwen2 never do.
        self.add_bos_token = bool(add_bos_token)
        self.chat_template = chat_template

    # --- encoding -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of token ids in use (special tokens included); a model may have more rows."""
        return int(self._tok.get_vocab_size(with_added_tokens=True))

    @property
    def backend(self) -> Tokenizer:
        return self._tok

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        ids: list[int] = list(self._tok.encode(text, add_special_tokens=False).ids)
        if FAULTS.active("tokenizer_backend_specials_added"):  # pragma: no mutate
            ids = list(self._tok.encode(text).ids)  # pragma: no mutate -- the defect: the backend's BOS as well
        if add_bos:
            ids.insert(0, self.bos_id)
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def with_backend(self, backend: Tokenizer) -> EngineTokenizer:
        """This tokenizer's special tokens and settings over another ``tokenizers`` backend."""
        add_bos = self.add_bos_token
        if FAULTS.active("tokenizer_with_backend_resets_bos"):  # the defect: the default setting comes back
            add_bos = True  # pragma: no mutate
        return EngineTokenizer(
            backend,
            self.bos_token,
            self.eos_token,
            self.pad_token,
            add_bos_token=add_bos,
            chat_template=self.chat_template,
        )

    def encode_prompt(self, text: str) -> list[int]:
        """``text`` as a model input: BOS first exactly when the tokenizer's own setting says so."""
        return self.encode(text, add_bos=self.add_bos_token)

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        add_generation_prompt: bool = True,
    ) -> list[int]:
        """Token ids of ``messages`` rendered through the tokenizer's chat template (as transformers'
        ``apply_chat_template(tokenize=True)``: the template writes any BOS itself)."""

        if self.chat_template is None:
            raise TokenizerError("this tokenizer has no chat template; give a plain prompt instead")
        text = render_chat(
            self.chat_template,
            messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )
        return self.encode(text)

    def encode_batch(self, texts: Sequence[str], *, add_bos: bool = False) -> list[list[int]]:
        return [self.encode(t, add_bos=add_bos) for t in texts]

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def special_ids(self) -> set[int]:
        return {self.bos_id, self.eos_id, self.pad_id}

    # --- vocabulary, for export -----------------------------------------------------------
    def tokens(self) -> list[str]:
        """Token strings indexed by id (byte-level symbols, as in ``tokenizer.json``)."""
        vocab = self._tok.get_vocab(with_added_tokens=True)
        # the defect: tokens added after training are left out
        if FAULTS.active("tokenizer_tokens_drop_added"):  # pragma: no mutate
            vocab = self._tok.get_vocab(with_added_tokens=False)  # pragma: no mutate
        out = [""] * len(vocab)
        for token, tid in vocab.items():
            if tid >= len(out):
                raise TokenizerError(f"token ids are not contiguous: {token!r} has id {tid} of {len(vocab)}")
            out[tid] = token
        return out

    def merges(self) -> list[str]:
        """BPE merges in rank order as ``"left right"`` strings (the GGUF/llama.cpp form)."""
        model = json.loads(self._tok.to_str())["model"]
        return [f"{left} {right}" for left, right in model.get("merges", [])]  # pairs since tokenizers 0.20

    # --- serialization --------------------------------------------------------------------
    def hf_json(self) -> str:
        """The plain Hugging Face ``tokenizer.json`` text."""
        return str(self._tok.to_str())

    def to_json(self) -> str:
        """Self-contained JSON: the HF tokenizer plus the special-token roles and their ids."""
        doc: dict[str, Any] = {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "special_tokens": {
                "bos": {"token": self.bos_token, "id": self.bos_id},
                "eos": {"token": self.eos_token, "id": self.eos_id},
                "pad": {"token": self.pad_token, "id": self.pad_id},
            },
            "tokenizer": json.loads(self._tok.to_str()),
        }
        # Written only when they differ from an engine-trained tokenizer's, so that tokenizer's JSON
        # (and every checkpoint digest over it) stays what it was before these settings existed.
        if not self.add_bos_token:
            doc["add_bos_token"] = False
        if self.chat_template is not None:
            doc["chat_template"] = self.chat_template
        if FAULTS.active("tokenizer_json_not_canonical"):  # pragma: no mutate
            return json.dumps(doc)  # pragma: no mutate -- the defect: insertion order, spaces, escaped non-ASCII
        return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> EngineTokenizer:
        """Inverse of :meth:`to_json`; a plain HF ``tokenizer.json`` with the default specials also loads."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TokenizerError(f"tokenizer JSON is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise TokenizerError("tokenizer JSON is not an object")
        if doc.get("format") == JSON_FORMAT:
            if doc.get("version") != JSON_VERSION:
                raise TokenizerError(f"unsupported tokenizer JSON version {doc.get('version')!r}")
            roles = doc.get("special_tokens")
            inner = doc.get("tokenizer")
            if not isinstance(roles, dict) or not isinstance(inner, dict):
                raise TokenizerError("tokenizer JSON lacks `special_tokens` or `tokenizer`")
            names = {}
            for role in ("bos", "eos", "pad"):
                entry = roles.get(role)
                if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
                    raise TokenizerError(f"tokenizer JSON lacks the `{role}` special token")
                names[role] = entry["token"]
            add_bos, template = doc.get("add_bos_token", True), doc.get("chat_template")
            if not isinstance(add_bos, bool):
                raise TokenizerError(f"tokenizer JSON `add_bos_token` must be true or false, got {add_bos!r}")
            if template is not None and not isinstance(template, str):
                raise TokenizerError("tokenizer JSON `chat_template` must be a string")
            tok = cls(
                _backend_from_dict(inner),
                names["bos"],
                names["eos"],
                names["pad"],
                add_bos_token=add_bos,
                chat_template=template,
            )
            for role in ("bos", "eos", "pad"):
                if FAULTS.active("tokenizer_json_ids_unchecked"):  # pragma: no mutate
                    break  # pragma: no mutate -- the defect: ids that disagree with the vocabulary load silently
                if roles[role].get("id") != getattr(tok, f"{role}_id"):
                    raise TokenizerError(
                        f"{role} token {names[role]!r} has id {getattr(tok, f'{role}_id')} in the vocabulary "
                        f"but {roles[role].get('id')!r} in `special_tokens`"
                    )
            return tok
        if "model" in doc:
            return cls(_backend_from_dict(doc))
        raise TokenizerError("not a tokenizer JSON document (no `format` or `model` key)")

    @classmethod
    def from_hf_file(
        cls,
        path: str | Path,
        bos_token: str = BOS_TOKEN,
        eos_token: str = EOS_TOKEN,
        pad_token: str = PAD_TOKEN,
        *,
        add_bos_token: bool = True,
        chat_template: str | None = None,
    ) -> EngineTokenizer:
        try:
            backend = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise TokenizerError(f"cannot read tokenizer file {path}: {exc}") from None
        return cls(backend, bos_token, eos_token, pad_token, add_bos_token=add_bos_token, chat_template=chat_template)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EngineTokenizer) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return f"EngineTokenizer(vocab_size={self.vocab_size}, bos={self.bos_id}, eos={self.eos_id}, pad={self.pad_id})"


def _backend_from_dict(doc: dict[str, Any]) -> Tokenizer:
    try:
        return Tokenizer.from_str(json.dumps(doc))
    except Exception as exc:
        raise TokenizerError(f"tokenizer JSON does not describe a valid tokenizer: {exc}") from None


def _new_backend() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def train_tokenizer_from_texts(texts: Sequence[str], vocab_size: int) -> EngineTokenizer:
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be at least {MIN_VOCAB_SIZE} (256 bytes + 3 specials), got {vocab_size}")
    backend = _new_backend()
    specials = list(SPECIAL_TOKENS)
    late = FAULTS.active("tokenizer_specials_appended")  # the defect: specials added after training
    min_frequency = MIN_PAIR_FREQUENCY
    if FAULTS.active("tokenizer_merges_singletons"):  # the defect: a pair seen once is merged too
        min_frequency = 1  # pragma: no mutate
    # tokenizers' progress bar writes to the process's stdout (blank lines even off a terminal),
    # where a command's JSON is read
    progress = False
    if FAULTS.active("tokenizer_training_progress_printed"):  # the defect: the trainer's progress is shown
        progress = True  # pragma: no mutate
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[] if late else specials,  # pragma: no mutate
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=progress,
    )
    backend.train_from_iterator(list(texts), trainer=trainer)
    if late:  # pragma: no mutate
        backend.add_special_tokens(specials)  # pragma: no mutate
    return EngineTokenizer(backend)


def train_tokenizer(vocab_size: int, files: Iterable[str | Path | CorpusFile] | None = None) -> EngineTokenizer:
    """Train on ``files`` (default: :func:`default_corpus_files`); deterministic for a given corpus."""
    corpus = default_corpus_files() if files is None else as_corpus_files(files)
    return train_tokenizer_from_texts(read_corpus(corpus), vocab_size)


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "pv-engine"


@functools.cache
def _source_digest() -> str:
    """sha256 of this module's source, read once: a process runs one version of it."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def training_digest(vocab_size: int) -> str:
    """sha256 of what decides a trained tokenizer besides its corpus: the vocabulary size, the
    trainer's settings, the untrained backend (model, pre-tokenizer, decoder), the tokenizers
    library's version, this module's source (how training is done) and the faults switched on."""
    recipe = {
        "vocab_size": vocab_size,
        "min_frequency": MIN_PAIR_FREQUENCY,
        "special_tokens": list(SPECIAL_TOKENS),
        "backend": json.loads(_new_backend().to_str()),
        "tokenizers": tokenizers.__version__,
        "source": _source_digest(),
        "faults": FAULTS.active_names(),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def cached_tokenizer(vocab_size: int, files: Iterable[str | Path | CorpusFile] | None = None) -> EngineTokenizer:
    """Like :func:`train_tokenizer`, reusing a cached result keyed by (vocab_size, corpus digest,
    :func:`training_digest`)."""
    corpus = default_corpus_files() if files is None else as_corpus_files(files)
    texts = read_corpus(corpus)
    digest = corpus_digest(texts)[:16]
    trained_by = training_digest(vocab_size)[:16]
    if FAULTS.active("tokenizer_cache_ignores_training"):  # the defect: an older trainer's entry is read back
        trained_by = "0" * 16  # pragma: no mutate
    path = cache_dir() / "tokenizers" / f"bpe-v{vocab_size}-{digest}-{trained_by}.json"
    if FAULTS.active("tokenizer_cache_key_ignores_size"):  # the defect: one entry per corpus, any size
        path = cache_dir() / "tokenizers" / f"bpe-{digest}.json"  # pragma: no mutate
    if path.is_file():
        try:
            return EngineTokenizer.from_json(path.read_text(encoding="utf-8"))
        except (TokenizerError, OSError, UnicodeDecodeError):
            pass  # a damaged cache entry is retrained and overwritten below
    tok = train_tokenizer_from_texts(texts, vocab_size)
    with contextlib.suppress(OSError):  # a read-only cache only costs a retrain next time
        write_atomic(path, tok.to_json())
    return tok
