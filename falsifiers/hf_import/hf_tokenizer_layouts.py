"""Hugging Face folders laid out as other checkpoints lay them out, against transformers' reading.

FALSIFY-HFI-001's Llama folder adds BOS by a ``TemplateProcessing`` post-processor, names one EOS
list in generation_config.json and stores float32 weights.  Other checkpoints differ: Llama 3 wraps
the template in a ``Sequence`` after a ``ByteLevel`` processor; a generation config may name one
EOS id as a list of one; config.json may name other special ids than its tokenizer's
(FALSIFY-HFI-004 reads them on import; here they must also survive an export); EOS may be token 0;
weights may be stored in bfloat16, alone or beside float32 norms; older folders hold the rotary
``inv_freq`` buffers.  Each copy is imported and its config fields, token ids, decodings, chat
rendering and special tokens compared with what AutoConfig, GenerationConfig and AutoTokenizer
read (``falsifiers.hf_import.hf_import``'s readings); each imported weight must be the stored tensor, in its
own dtype when the folder uses one and as float32 when it mixes them; import_hf's result names the
folder it read; the import's checkpoint is exported again and transformers must read the same from
both folders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.hf_interop import export_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.hf_import.hf_import import COUNTS, _edit_json, _reexport_mismatches, import_and_compare, write_folder
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def _post_processor_in_sequence(folder: Path) -> None:
    """Llama 3's layout: the BOS template inside a Sequence, after a ByteLevel processor."""
    path = folder / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["post_processor"] = {"type": "Sequence", "processors": [BYTE_LEVEL, doc["post_processor"]]}
    path.write_text(json.dumps(doc), encoding="utf-8")


def _add_bos_false_beside_template(folder: Path) -> None:
    """tokenizer_config.json saying add_bos_token false while the post-processor adds BOS."""
    _edit_json(folder / "tokenizer_config.json", add_bos_token=False)


def _add_bos_true_without_template(folder: Path) -> None:
    """tokenizer_config.json saying add_bos_token true while no post-processor adds BOS."""
    _edit_json(folder / "tokenizer_config.json", add_bos_token=True)
    _edit_json(folder / "tokenizer.json", post_processor=None)


def _ids_of_its_own(folder: Path) -> None:
    """config.json and generation_config.json naming other special ids than the tokenizer's."""
    for name in ("config.json", "generation_config.json"):
        _edit_json(folder / name, bos_token_id=5, eos_token_id=6, pad_token_id=7)


def _eos_zero(folder: Path) -> None:
    """Token id 0 as the end of a sequence (a vocabulary that starts with its EOS)."""
    for name in ("config.json", "generation_config.json"):
        _edit_json(folder / name, eos_token_id=0)


def _shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("model*.safetensors"))


def _retyped(folder: Path, matrices_only: bool) -> None:
    """Every weight (or every matrix, the norms kept float32) stored as bfloat16."""

    for shard in _shards(folder):
        state = {k: v.to(torch.bfloat16) if v.ndim > 1 or not matrices_only else v for k, v in load_file(shard).items()}
        save_file(state, str(shard), metadata={"format": "pt"})
    if not matrices_only:
        _edit_json(folder / "config.json", dtype="bfloat16")


def _with_inv_freq(folder: Path) -> None:
    """The rotary inv_freq buffers older transformers versions saved beside the weights."""

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    head = config["hidden_size"] // config["num_attention_heads"]
    inv = 1.0 / (config["rope_parameters"]["rope_theta"] ** (torch.arange(0, head, 2).float() / head))
    names = [f"model.layers.{i}.self_attn.rotary_emb.inv_freq" for i in range(config["num_hidden_layers"])]
    save_file({n: inv.clone() for n in names}, str(folder / "model-rotary.safetensors"), metadata={"format": "pt"})
    index = json.loads((folder / "model.safetensors.index.json").read_text(encoding="utf-8"))
    index["weight_map"].update(dict.fromkeys(names, "model-rotary.safetensors"))
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")


def _stored(folder: Path) -> dict[str, torch.Tensor]:

    out: dict[str, torch.Tensor] = {}
    for shard in _shards(folder):
        out |= {k: v for k, v in load_file(shard).items() if not k.endswith("inv_freq")}
    return out


def _generation_eos_of_one(folder: Path) -> None:
    doc = json.loads((folder / "generation_config.json").read_text(encoding="utf-8"))
    first = doc["eos_token_id"][0] if isinstance(doc["eos_token_id"], list) else doc["eos_token_id"]
    _edit_json(folder / "generation_config.json", eos_token_id=[first])


@checker(
    observes=[
        "folders",
        "refused",
        "config_fields",
        "config_mismatches",
        "token_mismatches",
        "reexport_mismatches",
        "loaded_fields_differing",
        "tensors_differing",
        "backend_specials_added",
    ],
    ids=["FALSIFY-HFI-005"],
)
def tokenizer_layouts_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """The Llama and Qwen2 folders rewritten as other checkpoints lay out BOS and EOS, imported,
    compared with transformers' reading, and exported again."""

    work = fresh_dir(tmp_path, "hf-tokenizer-layouts-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)
    cases = [
        ("Llama: EOS id 0", llama, _eos_zero),
        ("Llama: every weight bfloat16", llama, lambda f: _retyped(f, matrices_only=False)),
        ("Qwen2: matrices bfloat16, norms and biases float32", qwen2, lambda f: _retyped(f, matrices_only=True)),
        ("Llama: rotary inv_freq buffers beside the weights", llama, _with_inv_freq),
        ("Llama: other BOS, EOS and PAD ids than the tokenizer's", llama, _ids_of_its_own),
        ("Llama: the BOS template in a Sequence after ByteLevel", llama, _post_processor_in_sequence),
        ("Llama: a generation EOS list of one id", llama, _generation_eos_of_one),
        ("Qwen2: a generation EOS list of one id", qwen2, _generation_eos_of_one),
        ("Llama: add_bos_token false beside the BOS template", llama, _add_bos_false_beside_template),
        ("Llama: add_bos_token true without a BOS template", llama, _add_bos_true_without_template),
    ]
    counted = ("reexport_mismatches", "loaded_fields_differing", "tensors_differing", "backend_specials_added")
    out = dict.fromkeys((*COUNTS, *counted), 0)
    log: list[str] = []
    for n, (what, base, rewrite) in enumerate(cases):
        folder = work / f"case-{n}"
        shutil.copytree(base, folder)
        rewrite(folder)
        imported = import_and_compare(folder, what, out, log)
        if imported is None:
            continue
        # what import_hf returns besides the model: the folder it read, no safetensors metadata
        out["loaded_fields_differing"] += (imported.path != folder) + (imported.metadata != {})
        # the BOS rule lives in add_bos_token alone: the backend the checkpoint keeps adds no token of
        # its own, so a caller encoding with tokenizers' defaults does not get a second BOS
        backend = imported.tokenizer.backend
        out["backend_specials_added"] += backend.encode(what).ids != backend.encode(what, add_special_tokens=False).ids
        # each weight as stored: one dtype kept as it is, several read as float32
        stored = _stored(folder)
        kinds = {t.dtype for t in stored.values()}
        want_dtype = kinds.pop() if len(kinds) == 1 else torch.float32
        mine = imported.model.state_dict()
        out["tensors_differing"] += sum(
            k not in mine or mine[k].dtype != want_dtype or not torch.equal(mine[k], v.to(want_dtype))
            for k, v in stored.items()
        )
        again = export_hf(imported.model, imported.tokenizer, work / f"again-{n}")
        reexport = _reexport_mismatches(folder, Path(again))
        log.append(f"    exported again: {reexport} re-export checks differ")
        out["reexport_mismatches"] += reexport
    (work / "layouts.log").write_text("\n".join(log))
    return out
