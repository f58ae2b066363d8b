"""``export_checkpoint_gguf`` as a Python user calls it: a checkpoint file in, the GGUF asked for out.

The function loads a checkpoint and writes it as GGUF.  What it returns, where it writes, which
type it writes by default and as asked, and the bytes it writes are read here against the file
system and gguf-py, and against ``export_gguf`` on the same loaded model (FALSIFY-EXPORT-008 holds
that function to llama.cpp's layout): the returned path is the one given, nothing else appears in
the target's folder or the working directory, the default is f32 and each other type is the one
asked for, byte for byte what ``export_gguf`` writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.gguf_export import export_checkpoint_gguf, export_gguf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# gguf.LlamaFileType of each dtype the engine writes
FILE_TYPES = {"f32": "ALL_F32", "f16": "MOSTLY_F16", "q8_0": "MOSTLY_Q8_0", "q4_0": "MOSTLY_Q4_0"}


def _file_type(path: Path) -> str | None:
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    field = gguf.GGUFReader(str(path)).fields.get("general.file_type")
    return None if field is None else gguf.LlamaFileType(int(field.contents())).name


@checker(
    observes=["exports", "returned_elsewhere", "stray_files", "file_types_differing", "bytes_differing"],
    ids=["FALSIFY-EXPORT-015"],
)
def checkpoint_gguf_export(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """export_checkpoint_gguf with the default type and with each type named, run from an empty
    working directory; each file read back and compared with export_gguf's."""

    work = fresh_dir(tmp_path, "export-api-")
    ckpt = save_checkpoint(work / "model.safetensors", tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    loaded = load_checkpoint(ckpt)
    out = {"exports": 0, "returned_elsewhere": 0, "stray_files": 0, "file_types_differing": 0, "bytes_differing": 0}
    cwd, here = Path.cwd(), fresh_dir(tmp_path, "export-cwd-")
    target_dir, reference_dir = fresh_dir(tmp_path, "export-target-"), fresh_dir(tmp_path, "export-reference-")
    calls: list[tuple[str, tuple[Any, ...]]] = [("f32", ())] + [(d, (d,)) for d in FILE_TYPES]
    os.chdir(here)
    try:
        for i, (dtype, extra) in enumerate(calls):
            target = target_dir / f"model-{i}.gguf"
            before = set(target_dir.iterdir())
            got = export_checkpoint_gguf(ckpt, target, *extra)
            out["exports"] += 1
            out["returned_elsewhere"] += Path(got) != target
            out["stray_files"] += len(set(target_dir.iterdir()) - before - {target}) + len(list(here.iterdir()))
            if not target.is_file():
                out["file_types_differing"] += 1
                continue
            out["file_types_differing"] += _file_type(target) != FILE_TYPES[dtype]
            reference = export_gguf(loaded.model, loaded.tokenizer, reference_dir / f"model-{i}.gguf", dtype)  # type: ignore[arg-type]
            out["bytes_differing"] += target.read_bytes() != reference.read_bytes()
    finally:
        os.chdir(cwd)
    return out
