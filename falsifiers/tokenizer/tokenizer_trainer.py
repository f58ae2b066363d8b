"""The engine's tokenizer training against the ``tokenizers`` library's own BPE trainer.

The engine documents its tokenizer as a byte-level BPE: ``<|bos|>``, ``<|eos|>``, ``<|pad|>`` at ids
0-2, the 256 byte symbols, then merges of pairs seen at least twice, split by the ByteLevel rule
without a prefix space.  That description is built here straight from ``tokenizers`` (``BPE``,
``ByteLevel``, ``BpeTrainer``) and trained on the same texts; the engine's vocabulary, merges and
pipeline must be that tokenizer's, at the smallest size it accepts and above.  A corpus in which some
pairs occur exactly twice and others once puts the frequency threshold to the test.  Training from
files (paths as strings, ``Path`` or ``CorpusFile``) and from the default corpus must train on what
those files hold, and tokenizers compare equal only when they are the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from engine.corpus import CorpusFile, default_corpus_files, read_corpus
from engine.tokenizer import MIN_VOCAB_SIZE, train_tokenizer, train_tokenizer_from_texts
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SPECIALS = ["<|bos|>", "<|eos|>", "<|pad|>"]
MIN_FREQUENCY = 2  # a pair is merged only when it occurs this often
# "qz" and "xj" occur exactly twice, "vk" and "wq" once: a threshold of 2 merges the first two only
THRESHOLD_TEXTS = ("qz", "qz", "xj", "xj", "vk", "wq")
TEXTS = (
    "def add(a, b):\n    return a + b\n",
    "The quick brown fox jumps over the lazy dog.",
    "naïve café — 1234 日本",
) * 6 + THRESHOLD_TEXTS


def _reference(texts: list[str], vocab_size: int) -> Any:

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_FREQUENCY,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def _pipeline(hf_json: str) -> dict[str, Any]:
    """What decides how a text is split and joined: model vocabulary and merges, pre-tokenizer,
    decoder, added tokens (id, content, special)."""
    data = json.loads(hf_json)
    added = sorted((a["id"], a["content"], a["special"]) for a in data.get("added_tokens", []))
    return {
        "vocab": data["model"]["vocab"],
        "merges": [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]],
        "pre_tokenizer": data["pre_tokenizer"],
        "decoder": data["decoder"],
        "added": added,
    }


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # a comparison that raises does not tell them apart
        return False


@checker(
    observes=[
        "sizes", "pipelines_differing", "smallest_accepted", "below_smallest_refused", "threshold_merges",
        "file_forms", "file_forms_differing", "default_corpus_same", "unequal_told_apart", "batch_default_bos",
    ],
    ids=["FALSIFY-TOK-004"],
)  # fmt: skip
def training_as_bpe_trainer(tmp_path: Path, sizes: list[int]) -> dict[str, Any]:
    """Train the engine's tokenizer and the reference at each size; then from files in three forms,
    from the default corpus, and compare equality and the batch encoder's default."""

    texts = list(TEXTS)
    out: dict[str, Any] = {"sizes": 0, "pipelines_differing": 0, "threshold_merges": None}
    trained = {}
    for size in sizes:
        ours = train_tokenizer_from_texts(texts, size)
        trained[size] = ours
        out["sizes"] += 1
        out["pipelines_differing"] += _pipeline(ours.hf_json()) != _pipeline(_reference(texts, size).to_str())
        if size == max(sizes):
            merges = _pipeline(ours.hf_json())["merges"]
            out["threshold_merges"] = sorted(m for m in ("q z", "x j", "v k", "w q") if m in merges)
    smallest = len(SPECIALS) + 256
    out["smallest_accepted"] = (
        smallest == MIN_VOCAB_SIZE and train_tokenizer_from_texts(texts, smallest).vocab_size == smallest
    )
    try:
        train_tokenizer_from_texts(texts, smallest - 1)
        out["below_smallest_refused"] = False
    except ValueError as exc:
        out["below_smallest_refused"] = str(smallest) in str(exc)

    work = fresh_dir(tmp_path, "tokenizer-files-")
    paths = []
    for i, text in enumerate(texts):
        path = work / f"{i:03d}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    size = max(sizes)
    forms: dict[str, list[Any]] = {
        "str": [str(p) for p in paths],
        "Path": paths,
        "CorpusFile": [CorpusFile(p) for p in paths],
    }
    out["file_forms"] = len(forms)
    out["file_forms_differing"] = sum(train_tokenizer(size, files) != trained[size] for files in forms.values())
    default = train_tokenizer(size)
    out["default_corpus_same"] = default == train_tokenizer_from_texts(read_corpus(default_corpus_files()), size)
    # equality is sameness: another size, another corpus, or anything that is not a tokenizer differs
    a, b = trained[min(sizes)], trained[size]
    others = (a, default, "tokenizer", Tokenizer.from_str(b.hf_json()))
    out["unequal_told_apart"] = sum(_differs(b, other) for other in others)
    out["batch_default_bos"] = b.encode_batch(["def add", "fox"]) != [b.encode("def add"), b.encode("fox")]
    return out
