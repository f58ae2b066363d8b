"""Where a Hugging Face folder says that prompts start with BOS, and what generation stops on, in the
layouts other checkpoints use, against transformers' reading of the same folder.

FALSIFY-HFI-001's Llama folder adds BOS by a ``TemplateProcessing`` post-processor and names one
EOS list in generation_config.json.  Other checkpoints say it otherwise: Llama 3 wraps the
template in a ``Sequence`` after a ``ByteLevel`` processor; a generation config may name one EOS id
as a list of one; config.json may name other special ids than its tokenizer's (FALSIFY-HFI-004
reads them on import; here they must also survive an export).  Each copy is imported and its config fields, token ids,
decodings, chat rendering and special tokens compared with what AutoConfig, GenerationConfig and
AutoTokenizer read (``falsifiers.hf_import``'s readings); the import's checkpoint is then exported
again and transformers must read the same from both folders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from engine.tokenizer import EngineTokenizer
from falsifiers._workdir import fresh_dir
from falsifiers.hf_import import (
    _config_mismatches,
    _edit_json,
    _reexport_mismatches,
    _token_mismatches,
    write_folder,
)
from pv.checkers import checker

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def _post_processor_in_sequence(folder: Path) -> None:
    """Llama 3's layout: the BOS template inside a Sequence, after a ByteLevel processor."""
    path = folder / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["post_processor"] = {"type": "Sequence", "processors": [BYTE_LEVEL, doc["post_processor"]]}
    path.write_text(json.dumps(doc), encoding="utf-8")


def _ids_of_its_own(folder: Path) -> None:
    """config.json and generation_config.json naming other special ids than the tokenizer's."""
    for name in ("config.json", "generation_config.json"):
        _edit_json(folder / name, bos_token_id=5, eos_token_id=6, pad_token_id=7)


def _generation_eos_of_one(folder: Path) -> None:
    doc = json.loads((folder / "generation_config.json").read_text(encoding="utf-8"))
    first = doc["eos_token_id"][0] if isinstance(doc["eos_token_id"], list) else doc["eos_token_id"]
    _edit_json(folder / "generation_config.json", eos_token_id=[first])


@checker(
    observes=["folders", "refused", "config_fields", "config_mismatches", "token_mismatches", "reexport_mismatches"],
    ids=["FALSIFY-HFI-005"],
)
def tokenizer_layouts_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """The Llama and Qwen2 folders rewritten as other checkpoints lay out BOS and EOS, imported,
    compared with transformers' reading, and exported again."""
    import transformers

    from engine.errors import ExportError
    from engine.hf_interop import export_hf, import_hf

    work = fresh_dir(tmp_path, "hf-tokenizer-layouts-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)
    cases = [
        ("Llama: other BOS, EOS and PAD ids than the tokenizer's", llama, _ids_of_its_own),
        ("Llama: the BOS template in a Sequence after ByteLevel", llama, _post_processor_in_sequence),
        ("Llama: a generation EOS list of one id", llama, _generation_eos_of_one),
        ("Qwen2: a generation EOS list of one id", qwen2, _generation_eos_of_one),
    ]
    out = {"folders": 0, "refused": 0, "config_fields": 0, "config_mismatches": 0, "token_mismatches": 0}
    out["reexport_mismatches"] = 0
    log = []
    for n, (what, base, rewrite) in enumerate(cases):
        folder = work / f"case-{n}"
        shutil.copytree(base, folder)
        rewrite(folder)
        out["folders"] += 1
        try:
            imported = import_hf(folder)
        except ExportError as exc:
            log.append(f"--- {what}: refused: {exc}")
            out["refused"] += 1
            continue
        ref_tok = transformers.AutoTokenizer.from_pretrained(folder)
        fields, differing = _config_mismatches(folder, imported.config, ref_tok)
        tokens = _token_mismatches(imported.tokenizer, ref_tok)
        again = export_hf(imported.model, imported.tokenizer, work / f"again-{n}")
        reexport = _reexport_mismatches(folder, Path(again))
        log.append(f"--- {what}: {differing} of {fields} config fields, {tokens} token checks, {reexport} re-export")
        out["config_fields"] += fields
        out["config_mismatches"] += differing
        out["token_mismatches"] += tokens
        out["reexport_mismatches"] += reexport
    (work / "layouts.log").write_text("\n".join(log))
    return out
