"""A checkpoint holds one dtype: what ``inspect --json`` reports of it, and what is refused.

A safetensors file starts with an 8-byte little-endian length and a JSON header naming each
tensor's dtype, read here with ``struct`` and ``json``.  ``inspect --json`` reports the float32
init's and its bfloat16 copy's dtype as their headers name it.  A model that mixes dtypes
(bfloat16 weights beside float32 norms, as some Hugging Face checkpoints are laid out) is refused
by ``save_checkpoint`` naming both dtypes, before anything is written, instead of written as a
file that loading refuses; such a file written by another tool (safetensors itself) is refused by
``inspect`` naming the dtypes it mixes.  The special ids inspect reports are the ones the header
names, and for those it names none (the init's header names none) its tokenizer's.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from engine.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def header_dtypes(path: Path) -> list[str]:
    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    return sorted({entry["dtype"] for key, entry in header.items() if key != "__metadata__"})


def header_special_ids(path: Path) -> dict[str, Any]:
    """The BOS, EOS and PAD ids a checkpoint's header names, its tokenizer's where it names none."""

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
    specials = json.loads(meta["tokenizer"])["special_tokens"]
    return {
        f"{name}_token_id": json.loads(meta[f"{name}_token_id"]) if f"{name}_token_id" in meta else specials[name]["id"]
        for name in ("bos", "eos", "pad")
    }


@checker(
    observes=[
        "files",
        "exit_codes_nonzero",
        "dtypes_differing",
        "special_ids_differing",
        "mixed_save_refused",
        "mixed_file_refused",
    ],
    ids=["FALSIFY-IO-016"],
)
def inspect_reports_header_dtypes(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """inspect --json on the float32 init and a bfloat16 copy naming EOS 7 and PAD 5; a mixed model saved
    and a mixed file inspected."""

    cli = cli_runner()
    work = fresh_dir(tmp_path, "inspect-dtypes-")
    loaded = load_checkpoint(pretrained_init)
    model = loaded.model.to(torch.bfloat16)
    model.config = model.config.replace(bos_token_id=None, eos_token_id=7, pad_token_id=5)  # ids of its own
    bf16 = save_checkpoint(work / "bf16.safetensors", model, loaded.tokenizer, {})
    out: dict[str, Any] = {"files": 0, "exit_codes_nonzero": 0, "dtypes_differing": 0, "special_ids_differing": 0}
    for path in (Path(pretrained_init), bf16):
        out["files"] += 1
        result = cli("inspect", path, "--json")
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        (want,) = header_dtypes(path)
        report = json.loads(result.stdout)
        out["dtypes_differing"] += report["dtype"] != want
        for key, want_id in header_special_ids(path).items():
            out["special_ids_differing"] += report["architecture"][key] != want_id

    mixed = model  # bfloat16; its norms back to float32
    for name, module in mixed.named_modules():
        if name.endswith("norm"):
            module.float()
    target = work / "mixed.safetensors"
    try:
        save_checkpoint(target, mixed, loaded.tokenizer, {})
        out["mixed_save_refused"] = False
    except CheckpointError as exc:
        named = all(d in str(exc) for d in ("bfloat16", "float32"))
        out["mixed_save_refused"] = named and sorted(p.name for p in work.iterdir()) == ["bf16.safetensors"]
    # the same tensors and header as another tool writes them
    with safe_open(str(bf16), framework="pt") as fh:
        meta = fh.metadata()
    other = work / "other-tool.safetensors"
    save_file({k: v.contiguous() for k, v in mixed.state_dict().items() if k != "lm_head.weight" or
               not mixed.config.tie_word_embeddings}, str(other), metadata=meta)  # fmt: skip
    out["mixed_file_refused"] = refused_cleanly(cli("inspect", other, "--json"), ["BF16", "F32"])
    return out
