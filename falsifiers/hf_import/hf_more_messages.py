"""The rest of what an HF import or export says when it refuses, word for word, and the special
tokens a folder that names none imports with.

FALSIFY-HFI-002 requires these refusals to name what is wrong; FALSIFY-HFI-006 holds ten others to
their whole text.  Here: a path that is not a folder, a folder with no weights, a tied Qwen2 whose
head differs from its embedding and one whose head stands alone, a weight file that is JSON (the
message is the one ``inspect`` gives for that file), a special token the vocabulary lacks, a
config whose heads do not divide (the engine's rule after a fixed prefix), an unreadable
special-tokens map (a fixed prefix, then the JSON parser's words), a tokenizer.json the tokenizers
library cannot read and a weight of a dtype safetensors does not know (a fixed prefix, then the
library's words), and the two refusals of
``export_hf``.  A folder with no special-tokens map and no tokenizer config imports with the
engine's own special tokens, as documented.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.checkpoint import read_header
from engine.errors import CheckpointError, ExportError
from engine.hf_interop import export_hf, import_hf
from engine.tokenizer import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, EngineTokenizer
from falsifiers.hf_import.hf_import import _edit_json, write_folder
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NOT_IN_VOCAB = "<|not-in-vocab|>"


def _single_file(folder: Path, change: Callable[[dict[str, torch.Tensor]], None]) -> None:
    """The sharded weights as one model.safetensors, changed by ``change``."""
    index = folder / "model.safetensors.index.json"
    shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    state: dict[str, torch.Tensor] = {}
    for shard in shards:
        state.update(load_file(str(folder / shard)))
        (folder / shard).unlink()
    index.unlink()
    change(state)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _head_differs(state: dict[str, torch.Tensor]) -> None:
    state["lm_head.weight"] = state["model.embed_tokens.weight"] + 1.0


def _head_alone(state: dict[str, torch.Tensor]) -> None:
    state["lm_head.weight"] = state.pop("model.embed_tokens.weight")


def _weights_are_json(folder: Path) -> None:
    _single_file(folder, lambda state: None)
    (folder / "model.safetensors").write_text(json.dumps({"weights": "elsewhere"}), encoding="utf-8")


def _header_message(path: Path) -> str:

    try:
        read_header(path)
    except CheckpointError as exc:
        return str(exc)
    return "read_header accepted it"


def _no_weights(folder: Path) -> None:
    for p in [*folder.glob("*.safetensors"), folder / "model.safetensors.index.json"]:
        p.unlink()


def _special(folder: Path, **changes: Any) -> None:
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        if (folder / name).is_file():
            _edit_json(folder / name, **changes)


def _broken_map(folder: Path) -> None:
    (folder / "special_tokens_map.json").write_text("{not json", encoding="utf-8")


def _unknown_weight_dtype(folder: Path) -> None:
    """One model.safetensors whose first tensor claims a dtype safetensors does not know; the
    header stays well formed, so only reading the weights finds it."""
    _single_file(folder, lambda state: None)
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    first = next(k for k in sorted(header) if k != "__metadata__")
    header[first]["dtype"] = "Q7"
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + size :])


def _unknown_tokenizer_model(folder: Path) -> None:
    _edit_json(folder / "tokenizer.json", model={"type": "NoSuchModel"})


def _heads_not_dividing(folder: Path) -> None:
    """Attention heads that do not divide hidden_size, one key-value head, and a head_dim written as
    the quotient's floor (what a hand-edited config holds): the width's rule refuses it, not head_dim's."""
    hidden = json.loads((folder / "config.json").read_text(encoding="utf-8"))["hidden_size"]
    heads = next(n for n in (3, 5, 7) if hidden % n)
    _edit_json(folder / "config.json", num_attention_heads=heads, num_key_value_heads=1, head_dim=hidden // heads)


# (what, family, how to break the copy, the message for the copy, the whole message or its start)
CASES: list[tuple[str, str, Callable[[Path], None], Callable[[Path], str], bool]] = [
    ("weights only as JSON", "llama", _weights_are_json, lambda f: _header_message(f / "model.safetensors"), True),
    ("no weights", "llama", _no_weights, lambda f: f"{f}: no model.safetensors", True),
    ("a tied head that differs", "qwen2", lambda f: _single_file(f, _head_differs),
     lambda f: "tie_word_embeddings is true but lm_head.weight differs from the embedding", True),
    ("a tied head alone", "qwen2", lambda f: _single_file(f, _head_alone),
     lambda f: "missing tensor `model.embed_tokens.weight`", True),
    ("a BOS the vocabulary lacks", "llama", lambda f: _special(f, bos_token=NOT_IN_VOCAB),
     lambda f: f"{f / 'tokenizer.json'}: bos token '{NOT_IN_VOCAB}' is not in the tokenizer's vocabulary", True),
    ("heads that do not divide", "llama", lambda f: _edit_json(f / "config.json", num_key_value_heads=3),
     lambda f: "config.json is inconsistent: ", False),
    ("heads that do not divide the width, head_dim its floor", "llama", _heads_not_dividing,
     lambda f: "config.json is inconsistent: ", False),
    ("a special-tokens map that is not JSON", "llama", _broken_map,
     lambda f: f"{f / 'special_tokens_map.json'}: not valid JSON: ", False),
    ("a weight of a dtype safetensors does not know", "llama", _unknown_weight_dtype,
     lambda f: f"{f / 'model.safetensors'}: cannot read safetensors weights: ", False),
    ("a tokenizer.json of an unknown model", "qwen2", _unknown_tokenizer_model,
     lambda f: f"{f / 'tokenizer.json'}: not a tokenizer the tokenizers library reads: ", False),
]  # fmt: skip


@checker(
    observes=["refusals", "messages_differing", "differing", "default_specials", "export_refusals_differing"],
    ids=["FALSIFY-HFI-007"],
)
def hf_more_refusals(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """Llama and Qwen2 folders written by transformers, copies broken one way each through
    import_hf, a file given for a folder, a copy without special-token files, and two exports."""

    work = fresh_dir(tmp_path, "hf-more-")
    sources = {family: write_folder(work / family, engine_tokenizer, family, 0) for family in ("llama", "qwen2")}
    out: dict[str, Any] = {"refusals": 0, "messages_differing": 0, "differing": []}

    def refused(what: str, call: Callable[[], object], message: str, whole: bool) -> None:
        try:
            call()
            got = "not refused"
        except ExportError as exc:
            out["refusals"] += 1
            got = str(exc)
        if (got != message) if whole else not (got.startswith(message) and len(got) > len(message)):
            out["messages_differing"] += 1
            out["differing"].append(f"{what}: {got!r} != {message!r}{'' if whole else ' + ...'}")

    for i, (what, family, breaks, message, whole) in enumerate(CASES):
        copy = work / f"broken-{i}"
        shutil.copytree(sources[family], copy)
        breaks(copy)
        refused(what, lambda c=copy: import_hf(c), message(copy), whole)  # type: ignore[misc]
    a_file = sources["llama"] / "config.json"
    refused("a file for a folder", lambda: import_hf(a_file), f"{a_file}: not a directory", True)

    bare = work / "no-special-files"
    shutil.copytree(sources["llama"], bare)
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        (bare / name).unlink(missing_ok=True)
    tok = import_hf(bare).tokenizer
    out["default_specials"] = [tok.bos_token, tok.eos_token, tok.pad_token] == [BOS_TOKEN, EOS_TOKEN, PAD_TOKEN]

    model = tiny_model_factory(0)
    small = tiny_model_factory(0, vocab_size=engine_tokenizer.vocab_size - 1)
    occupied = work / "occupied"
    occupied.write_text("a file", encoding="utf-8")
    before = out["messages_differing"]
    refused("export onto a file", lambda: export_hf(model, engine_tokenizer, occupied),
            f"{occupied} exists and is not a directory", True)  # fmt: skip
    refused("export of a smaller vocabulary", lambda: export_hf(small, engine_tokenizer, work / "small"),
            f"tokenizer has {engine_tokenizer.vocab_size} tokens but vocab_size is "
            f"{engine_tokenizer.vocab_size - 1}", True)  # fmt: skip
    out["export_refusals_differing"] = out["messages_differing"] - before
    return out
