"""Special token ids that config.json names for itself, against transformers' reading of the folder.

A checkpoint's config.json may name other BOS/EOS/PAD ids than its tokenizer's special tokens (a
model trained to stop on an end-of-turn token, a pad id reused from another token), or an EOS list
of one id; transformers' model config and the generation config it derives then carry those ids,
and generation stops on them.  A hand-written config may also name only its RoPE base in
``rope_parameters``, with no ``rope_type``: plain RoPE.  Each folder of FALSIFY-HFI-001 is rewritten
one such way and imported;
the ids, with every other config field and the tokenizer, are read back against AutoConfig,
GenerationConfig and AutoTokenizer on the same folder (``falsifiers.hf_import.hf_import``'s readings).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from engine.tokenizer import EngineTokenizer
from falsifiers.hf_import.hf_import import _DELETE, COUNTS, _edit_json, import_and_compare, write_folder
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _cases(llama: Path, qwen2: Path) -> list[tuple[str, Path, dict[str, Any], bool]]:
    """(what, source folder, config.json changes, keep generation_config.json)."""
    return [
        ("Llama: other BOS, EOS and PAD ids, no generation config", llama,
         {"bos_token_id": 5, "eos_token_id": 6, "pad_token_id": 7}, False),
        ("Llama: an EOS list of one id, no generation config", llama, {"eos_token_id": [6]}, False),
        ("Llama: an EOS list of one id beside the generation config", llama, {"eos_token_id": [6]}, True),
        ("Qwen2: other BOS and PAD ids beside the generation config", qwen2,
         {"bos_token_id": 8, "pad_token_id": 9}, True),
        ("Qwen2: PAD id 0, no BOS, no generation config", qwen2, {"pad_token_id": 0, "bos_token_id": _DELETE}, False),
        # hand-written: RoPE parameters naming only their base (no rope_type: plain RoPE)
        ("Llama: rope_parameters without a rope_type", llama, {"rope_parameters": {"rope_theta": 250000.0}}, True),
    ]  # fmt: skip


@checker(
    observes=["folders", "refused", "config_fields", "config_mismatches", "token_mismatches"],
    ids=["FALSIFY-HFI-004"],
)
def config_special_ids_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """The Llama and Qwen2 folders with config.json's special ids rewritten, imported, and compared
    with what transformers reads from each."""
    work = fresh_dir(tmp_path, "hf-config-ids-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)
    out = dict.fromkeys(COUNTS, 0)
    log: list[str] = []
    for n, (what, base, changes, generation) in enumerate(_cases(llama, qwen2)):
        folder = work / f"case-{n}"
        shutil.copytree(base, folder)
        if not generation:
            (folder / "generation_config.json").unlink()
        _edit_json(folder / "config.json", **changes)
        import_and_compare(folder, what, out, log)
    (work / "config-ids.log").write_text("\n".join(log))
    return out
