"""Which copy of a tensor a sharded Hugging Face folder's import reads.

A sharded folder's ``model.safetensors.index.json`` places each tensor in one shard.  A shard can
still hold a tensor the index places elsewhere (a second copy, or the one copy moved), or one the
index does not list at all, after a hand edit or a merge script.  Reading every shard whole would
take whichever copy comes last, silently; the engine reads a tensor only where the index places it
and refuses a shard that holds anything else, naming the tensor, the shard and where the index
places it.  The folder is transformers' own sharded Llama folder (FALSIFY-HFI-001's); the import
of it as written is compared, tensor by tensor, with each tensor read from the shard the index
names.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.errors import ExportError
from engine.hf_interop import hf_state_dict, import_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.hf_import.hf_import import Q_PROJ, write_folder
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

INDEX = "model.safetensors.index.json"
STRAY = "model.layers.0.self_attn.stray.weight"


def _index(folder: Path) -> dict[str, str]:
    weight_map: dict[str, str] = json.loads((folder / INDEX).read_text())["weight_map"]
    return weight_map


def _rewrite(folder: Path, shard: str, edit: Callable[[dict[str, torch.Tensor]], object]) -> None:
    """``shard`` rewritten with ``edit`` applied to its tensors; the index left as it was."""
    tensors = load_file(str(folder / shard))
    edit(tensors)
    save_file(tensors, str(folder / shard), metadata={"format": "pt"})


def _cases(folder: Path) -> dict[str, tuple[Callable[[Path], None], tuple[str, ...]]]:
    """(how to break a copy of ``folder``, what the refusal must name) per case."""
    placed = _index(folder)
    home = placed[Q_PROJ]
    last = sorted(set(placed.values()))[-1]
    assert home != last, "the first layer's q_proj and the last shard must differ for the cases to mean anything"
    weight = load_file(str(folder / home))[Q_PROJ]

    def copied(f: Path) -> None:  # the index's copy stays; a different one is added to the last shard
        _rewrite(f, last, lambda t: t.update({Q_PROJ: weight + 1.0}))

    def moved(f: Path) -> None:
        _rewrite(f, home, lambda t: t.pop(Q_PROJ))
        _rewrite(f, last, lambda t: t.update({Q_PROJ: weight.clone()}))

    def unlisted(f: Path) -> None:
        _rewrite(f, last, lambda t: t.update({STRAY: weight.clone()}))

    return {
        "a second copy in another shard": (copied, (Q_PROJ, last, f"places it in {home}")),
        "the one copy moved to another shard": (moved, (Q_PROJ, home, INDEX)),
        "a tensor the index does not list": (unlisted, (STRAY, last, "does not list it")),
    }


@checker(
    observes=["tensors", "tensors_not_as_indexed", "cases", "refused", "named", "imported_a_stray_copy"],
    ids=["FALSIFY-HFI-011"],
)
def shards_read_as_indexed(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """transformers' sharded Llama folder, as written and with a tensor copied, moved or unlisted."""
    work = fresh_dir(tmp_path, "hf-shards-")
    folder = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    state = hf_state_dict(import_hf(folder).model)
    by_index = {name: load_file(str(folder / shard))[name] for name, shard in _index(folder).items()}
    out: dict[str, Any] = {"tensors": len(state)}
    out["tensors_not_as_indexed"] = sum(
        name not in by_index or not torch.equal(t, by_index[name]) for name, t in state.items()
    ) + len(set(by_index) - set(state))
    cases = _cases(folder)
    out |= {"cases": len(cases), "refused": 0, "named": 0, "imported_a_stray_copy": 0}
    for n, (breaks, names) in enumerate(cases.values()):
        broken = work / f"case-{n}"
        shutil.copytree(folder, broken)
        breaks(broken)
        try:
            import_hf(broken)
        except ExportError as exc:
            out["refused"] += 1
            out["named"] += all(name in str(exc) for name in names)
        else:
            out["imported_a_stray_copy"] += 1
    return out
