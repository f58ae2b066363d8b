"""What ``load_checkpoint`` says of a checkpoint whose tokenizer, manifest or tensors it cannot use.

A checkpoint carries its tokenizer as the JSON text under its header's ``tokenizer`` key.  A file
without that key is refused with a ``CheckpointError`` that names the key and says that the
checkpoint embeds no tokenizer; one whose text the tokenizer cannot be rebuilt from is refused
naming the key as unusable, followed by the tokenizer's own refusal of that text (read here from
``EngineTokenizer.from_json``, the reader the message quotes); one whose tokenizer has more tokens
than the header's ``vocab_size`` names both numbers; one whose ``manifest`` is JSON but not an
object names the key; one whose format, format version or architecture keys are missing, not JSON
or of the wrong kind names the key and what it holds (an inconsistent architecture quoting
``ModelConfig.from_dict``'s own refusal); one missing tensors names the first of them in the
model's own order and how many more are missing (no count for one, "1 more" for two); one with a
tensor the model does not have names the first in sorted order (a tied checkpoint's head with a
hint); a tensor of the wrong shape, a tensor that is not floating-point, one holding a NaN and
tensors of two dtypes are named with what was expected.  The untouched file loads, and the result
carries its header and path.  The files are written with safetensors' own ``save_file``: a
checkpoint of the tiny preset with its header edited.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from engine.architectures import ARCHITECTURES
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.config import ARCHITECTURE_KEYS, ModelConfig
from engine.errors import CheckpointError, TokenizerError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

UNUSABLE = ["{not json", '{"format": "something else"}']
NORM, HEAD = "model.norm.weight", "lm_head.weight"


# header edits (a value of None removes the key) and the refusal each must get
HEADER_EDITS: list[tuple[dict[str, str | None], str]] = [
    ({"format": None}, "missing metadata key `format`: not a pv engine checkpoint"),
    ({"format": "gguf"}, "metadata `format` is 'gguf', expected 'pv-engine-checkpoint': not a pv engine checkpoint"),
    ({"format_version": None}, "missing metadata key `format_version`: the checkpoint's format cannot be told"),
    ({"format_version": "2"}, "unsupported checkpoint format_version '2'; this engine reads '1'"),
    ({"hidden_size": None}, "missing metadata key `hidden_size`"),
    ({"hidden_size": "[" * 70}, f"metadata key `hidden_size` is not valid JSON: {'[' * 60!r}"),
    ({"architecture": '"gpt2"'}, f"unknown architecture `gpt2`; supported: {', '.join(ARCHITECTURES)}"),
    ({"hidden_size": "0"}, "metadata key `hidden_size` must be a positive integer, got 0"),
    ({"num_hidden_layers": "true"}, "metadata key `num_hidden_layers` must be a positive integer, got true"),
    ({"rms_norm_eps": "0"}, "metadata key `rms_norm_eps` must be a positive number, got 0"),
    ({"rope_theta": "true"}, "metadata key `rope_theta` must be a positive number, got true"),
    ({"tie_word_embeddings": "1"}, "metadata key `tie_word_embeddings` must be true or false, got 1"),
    ({"pad_token_id": '"0"'}, 'metadata key `pad_token_id` must be a token id below vocab_size, got "0"'),
    (
        {"eos_token_id": "[1, -1]"},
        "metadata key `eos_token_id` must be a token id below vocab_size or a list of them, got [1, -1]",
    ),
]
INCONSISTENT = {"num_attention_heads": "3"}  # 3 heads do not divide the tiny preset's width


def _config_refusal(meta: dict[str, str]) -> str:
    """ModelConfig's own refusal of the architecture a header describes (the text the loader quotes)."""
    try:
        ModelConfig.from_dict({key: json.loads(meta[key]) for key in ARCHITECTURE_KEYS})
    except ValueError as exc:
        return str(exc)
    return "(accepted)"


def _saved(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """A saved checkpoint's tensors and header, as safetensors reads them (the edits start from these)."""

    with safe_open(str(path), framework="pt") as f:
        return load_file(str(path)), dict(f.metadata() or {})


def _tokenizer_refusal(text: str) -> str:
    try:
        EngineTokenizer.from_json(text)
    except TokenizerError as exc:
        return str(exc)
    return "(accepted)"


@checker(
    observes=["refusals", "refusals_differing", "loaded_metadata_as_read", "loaded_path_given"],
    ids=["FALSIFY-CKPT-011"],
)
def load_refusals_named(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """load_checkpoint of the tiny preset's checkpoint with its header's tokenizer removed, with it
    replaced by each text of ``UNUSABLE``, with a vocab_size one below the tokenizer's, with a
    manifest that is a JSON list, with each edit of ``HEADER_EDITS`` and ``INCONSISTENT``, without
    its final norm, without it and one more tensor, and without every tensor of layer 1; a tied
    checkpoint that also holds the head, and one holding the head and another tensor; the final
    norm at half its width, as int64, holding a NaN, and as float16 among float32 tensors.
    ``loaded_*``: the untouched file loads, giving back its header as safetensors reads it and the
    path it was given, as a Path."""

    work = fresh_dir(tmp_path, "load-refusals-")
    model = tiny_model_factory(0)
    good = save_checkpoint(work / "good.safetensors", model, engine_tokenizer)
    tensors, meta = _saved(good)
    cases: list[tuple[Path, str]] = []
    without = {k: v for k, v in meta.items() if k != "tokenizer"}
    save_file(tensors, str(work / "no-tokenizer.safetensors"), metadata=without)
    cases.append(
        (
            work / "no-tokenizer.safetensors",
            "missing metadata key `tokenizer`: the checkpoint has no embedded tokenizer",
        )
    )
    for i, text in enumerate(UNUSABLE):
        path = work / f"unusable-{i}.safetensors"
        save_file(tensors, str(path), metadata={**meta, "tokenizer": text})
        cases.append((path, f"metadata key `tokenizer` is unusable: {_tokenizer_refusal(text)}"))
    vocab = engine_tokenizer.vocab_size
    save_file(tensors, str(work / "small-vocab.safetensors"), metadata={**meta, "vocab_size": json.dumps(vocab - 1)})
    cases.append((work / "small-vocab.safetensors", f"tokenizer has {vocab} tokens but vocab_size is {vocab - 1}"))
    save_file(tensors, str(work / "list-manifest.safetensors"), metadata={**meta, "manifest": "[1, 2]"})
    cases.append((work / "list-manifest.safetensors", "metadata key `manifest` is not a JSON object"))
    for i, (edit, message) in enumerate(HEADER_EDITS):
        header = {k: v for k, v in {**meta, **edit}.items() if v is not None}
        save_file(tensors, str(work / f"header-{i}.safetensors"), metadata=header)
        cases.append((work / f"header-{i}.safetensors", message))
    inconsistent = {**meta, **INCONSISTENT}
    save_file(tensors, str(work / "inconsistent.safetensors"), metadata=inconsistent)
    cases.append(
        (work / "inconsistent.safetensors", f"inconsistent architecture metadata: {_config_refusal(inconsistent)}")
    )
    order = list(model.state_dict())  # the model's own order of its tensors
    missing = {
        "no-norm": {NORM},
        "two-missing": {NORM, "model.layers.1.mlp.down_proj.weight"},
        "no-layer-1": {n for n in tensors if ".layers.1." in n},
    }
    for label, gone in missing.items():
        path = work / f"{label}.safetensors"
        save_file({n: t for n, t in tensors.items() if n not in gone}, str(path), metadata=meta)
        first = next(n for n in order if n in gone)
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        cases.append((path, f"missing tensor `{first}`{more}"))
    tied = tiny_model_factory(0, tie_word_embeddings=True)
    tied_path = save_checkpoint(work / "tied.safetensors", tied, engine_tokenizer)
    tied_tensors, tied_meta = _saved(tied_path)
    head = tied_tensors["model.embed_tokens.weight"].clone()
    width = tensors[NORM].shape[0]
    edited = {
        "tied-head": (
            tied_tensors | {HEAD: head},
            tied_meta,
            f"unexpected tensor `{HEAD}` (tied embeddings store the head once)",
        ),
        "tied-head-and-extra": (
            tied_tensors | {HEAD: head, "extra.weight": torch.zeros(2)},
            tied_meta,
            "unexpected tensor `extra.weight`",
        ),
        "norm-halved": (
            tensors | {NORM: torch.ones(width // 2)},
            meta,
            f"tensor `{NORM}` has shape [{width // 2}], expected [{width}]",
        ),
        "norm-integer": (
            tensors | {NORM: torch.ones(width, dtype=torch.int64)},
            meta,
            f"tensor `{NORM}` has dtype I64; a checkpoint holds floating-point weights",
        ),
        "norm-nan": (
            tensors | {NORM: torch.cat([torch.tensor([float("nan")]), tensors[NORM][1:]])},
            meta,
            f"tensor `{NORM}` holds NaN or Inf values",
        ),
        "norm-half": (
            tensors | {NORM: torch.ones(width, dtype=torch.float16)},
            meta,
            "tensors mix dtypes ['F16', 'F32']; a checkpoint holds one dtype",
        ),
    }
    for label, (written, header, message) in edited.items():
        save_file(written, str(work / f"{label}.safetensors"), metadata=header)
        cases.append((work / f"{label}.safetensors", message))
    differing = refusals_differing(
        (functools.partial(load_checkpoint, path), CheckpointError, message) for path, message in cases
    )
    loaded = load_checkpoint(str(good))  # the untouched file, named by its text as a user types it
    return {
        "refusals": len(cases),
        "refusals_differing": differing,
        "loaded_metadata_as_read": int(loaded.metadata == meta),
        "loaded_path_given": int(isinstance(loaded.path, Path) and loaded.path == good),
    }
