"""A pretraining corpus a user names is tokenized as written, file by file, into the two streams.

``tokenize_corpus`` encodes each text with the tokenizer's BOS and EOS around it, keeps the first
``round(n * (1 - val_fraction))`` ids of each for training and the rest for validation, and
concatenates the fronts and the tails in the order the files were given.  The reference here is
written out from the ``tokenizers`` backend and that rule; the streams' digest is
``falsifiers.training_data.data.stream_digest``'s formula.  The streams' windows and validation batches are read
back against plain tensor slicing.  The streams' lengths are compared with the reference's, never
with numbers measured once: the engine's tokenizer is trained on the running interpreter's standard
library, so another Python version tokenizes the same text into other ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.corpus import CorpusFile
from engine.data import tokenize_corpus
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from falsifiers.training_data.data import stream_digest
from pv.checkers import checker

DOCUMENTED_VAL_FRACTION = 0.1  # the default the engine's docs give
TEXTS = {
    "notes.txt": "déjà vu — naïve café, 東京 and a tab\there.\n" * 12,
    "module.py": 'def area(r):\n    """Area of a circle."""\n    return 3.14159 * r * r\n\n\nprint(area(2))\n' * 6,
    "cut.txt": "ééééé abc " * 30,
}
CUT_LIMIT = 37  # bytes of cut.txt read: inside the second byte pair of an "é"


def _reference(backend: Any, tok: EngineTokenizer, texts: list[str], fraction: float) -> tuple[list[int], list[int]]:
    train: list[int] = []
    val: list[int] = []
    for text in texts:
        ids = [tok.bos_id, *backend.encode(text, add_special_tokens=False).ids, tok.eos_id]
        cut = round(len(ids) * (1.0 - fraction))
        train += ids[:cut]
        val += ids[cut:]
    return train, val


@checker(
    observes=[
        "cases",
        "reference_cases",
        "streams_differing",
        "dtypes",
        "digests_differing",
        "vocab_differing",
        "refusals_differing",
        "windows_differing",
        "short_stream_refusal",
    ],
    ids=["FALSIFY-DATA-010"],
)
def corpus_streams_as_tokenized(tmp_path: Path, engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """tokenize_corpus on three files given as a str, a Path and a CorpusFile cut inside a
    character (val_fraction 0.25 and the default), on one file (0.5), on no file, and refusing
    val_fraction 0, 1, 1.5 and -0.2."""

    folder = fresh_dir(tmp_path, "corpus-")
    for name, text in TEXTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    cut_text = (folder / "cut.txt").read_bytes()[:CUT_LIMIT].decode("utf-8", errors="replace")
    mixed: list[Any] = [str(folder / "notes.txt"), folder / "module.py", CorpusFile(folder / "cut.txt", CUT_LIMIT)]
    mixed_texts = [TEXTS["notes.txt"], TEXTS["module.py"], cut_text]
    backend = engine_tokenizer.backend
    cases: list[tuple[str, list[Any], list[str], float | None]] = [
        ("mixed at 0.25", mixed, mixed_texts, 0.25),
        ("mixed at the default", mixed, mixed_texts, None),
        ("one file at 0.5", [folder / "module.py"], [TEXTS["module.py"]], 0.5),
        ("no file", [], [], 0.25),
    ]
    out: dict[str, Any] = {
        "cases": [],
        "reference_cases": [],
        "streams_differing": [],
        "dtypes": set(),
        "digests_differing": [],
        "vocab_differing": [],
        "refusals_differing": [],
        "windows_differing": [],
    }
    vocab = backend.get_vocab_size(with_added_tokens=True)
    kept = None
    for name, files, texts, fraction in cases:
        if fraction is None:
            data = tokenize_corpus(engine_tokenizer, files)
            want_train, want_val = _reference(backend, engine_tokenizer, texts, DOCUMENTED_VAL_FRACTION)
        else:
            data = tokenize_corpus(engine_tokenizer, files, val_fraction=fraction)
            want_train, want_val = _reference(backend, engine_tokenizer, texts, fraction)
        out["cases"].append([int(data.train.numel()), int(data.val.numel())])
        out["reference_cases"].append([len(want_train), len(want_val)])
        out["dtypes"].update({str(data.train.dtype), str(data.val.dtype)})
        if (
            data.train.dim() != 1
            or data.val.dim() != 1
            or (data.train.tolist(), data.val.tolist())
            != (
                want_train,
                want_val,
            )
        ):
            out["streams_differing"].append(name)
        want = stream_digest(torch.tensor(want_train, dtype=torch.int64), torch.tensor(want_val, dtype=torch.int64))
        if data.digest != want:
            out["digests_differing"].append(name)
        if data.vocab_size != vocab:
            out["vocab_differing"].append(name)
        if name == "mixed at 0.25":
            kept = data
    for fraction in (0.0, 1.0, 1.5, -0.2):
        try:
            tokenize_corpus(engine_tokenizer, mixed, val_fraction=fraction)
            message = None
        except ValueError as exc:
            message = str(exc)
        if message != f"val_fraction must be in (0, 1), got {fraction}":
            out["refusals_differing"].append([fraction, message])
    assert kept is not None
    out.update(_windows(kept))
    out["dtypes"] = sorted(out["dtypes"])
    return out


def _windows(data: Any) -> dict[str, Any]:
    """The windows and their counts (each split named, and the default), and the validation batches
    (the first two, and all), of the mixed corpus at 0.25, against slicing the streams by hand; and
    a window longer than the validation stream refused."""
    differing = []
    for seq_len in (7, 16):
        for split, stream in (("train", data.train), ("val", data.val)):
            n = stream.numel() // seq_len
            if data.num_windows(seq_len, split) != n:
                differing.append(f"num_windows {split} {seq_len}")
            if not torch.equal(data.windows(seq_len, split), stream[: n * seq_len].reshape(n, seq_len)):
                differing.append(f"windows {split} {seq_len}")
        n = data.train.numel() // seq_len  # the split left at its default: the training stream
        if data.num_windows(seq_len) != n or not torch.equal(
            data.windows(seq_len), data.train[: n * seq_len].reshape(n, seq_len)
        ):
            differing.append(f"default split {seq_len}")
        rows = data.val[: (data.val.numel() // seq_len) * seq_len].reshape(-1, seq_len)
        every = [rows[i : i + 3] for i in range(0, rows.size(0), 3)]
        for limit in (2, 100):  # the first two batches, and all of them
            got, want = data.val_batches(3, seq_len, limit), every[:limit]
            if len(got) != len(want) or not all(torch.equal(a, b) for a, b in zip(got, want, strict=False)):
                differing.append(f"val_batches {seq_len} up to {limit}")
    too_long = data.val.numel() + 1
    try:
        data.windows(too_long, "val")
        refusal = None
    except ValueError as exc:
        refusal = str(exc) == f"the val stream has {data.val.numel()} tokens, fewer than one window of {too_long}"
    return {"windows_differing": differing, "short_stream_refusal": refusal}
