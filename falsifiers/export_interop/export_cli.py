"""What ``python -m engine export`` writes: the files the export functions write for the same model.

EXPORT-001..012 hold ``export_hf`` and ``export_gguf`` to transformers, gguf-py and llama.cpp; this
claim holds the command to those functions.  Each request runs through the command line, and the
reference is the function called here on the checkpoint loaded (or, with ``--adapter``, on the base
with the adapter merged by ``engine.adapters.merged``), every file compared byte for byte.  The
dtype a request names is also read back from the files themselves: safetensors' own header for a
Hugging Face folder, gguf-py's tensor types for a GGUF file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.adapters import find_adapter, merged
from engine.checkpoint import load_checkpoint
from engine.data import InstructionData
from engine.gguf_export import export_gguf
from engine.hf_interop import export_hf
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.inspect_reports import _sha256
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# (format, --dtype, with the adapter): the tensor types each request must write for 2-D weights
REQUESTS: tuple[tuple[str, str, bool], ...] = (
    ("hf", "f32", False), ("hf", "f16", False), ("hf", "f16", True),
    ("gguf", "f32", False), ("gguf", "f16", True), ("gguf", "q8_0", False), ("gguf", "q4_0", False),
)  # fmt: skip
HF_DTYPES = {"f32": "F32", "f16": "F16"}


def _digests(target: Path) -> dict[str, str]:
    """sha256 of each file of an export (a folder's files by relative path, or the one file)."""
    files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
    return {p.relative_to(target).as_posix() if target.is_dir() else p.name: _sha256(p) for p in files}


def _reference(fmt: str, dtype: str, checkpoint: Path, adapter: Path | None, target: Path) -> Path:

    if adapter is not None:
        model, loaded = merged(checkpoint, find_adapter(adapter), "cpu")
    else:
        loaded = load_checkpoint(checkpoint)
        model = loaded.model
    if fmt == "hf":
        return export_hf(model, loaded.tokenizer, target, torch.float16 if dtype == "f16" else None)
    return export_gguf(model, loaded.tokenizer, target, dtype)  # type: ignore[arg-type]


def _dtype_mismatches(fmt: str, dtype: str, target: Path) -> int:
    """2-D weights whose type, as the file itself declares it, is not the one asked for: for a
    GGUF quantization, matrices whose rows are not whole 32-weight blocks are F16 instead."""
    if fmt == "hf":
        bad = 0
        for path in target.glob("*.safetensors"):
            with safe_open(str(path), framework="pt") as fh:
                slices = [fh.get_slice(n) for n in fh.keys()]  # noqa: SIM118 (safe_open has no __iter__)
                bad += sum(len(s.get_shape()) == 2 and s.get_dtype() != HF_DTYPES[dtype] for s in slices)
        return bad
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    from gguf import GGUFReader

    quantized = dtype.startswith("q")
    weights = [t for t in GGUFReader(str(target)).tensors if len(t.shape) == 2]
    return sum(
        t.tensor_type.name != (dtype.upper() if not quantized or int(t.shape[0]) % 32 == 0 else "F16") for t in weights
    )


@checker(
    observes=["requests", "exit_codes_nonzero", "announced", "files_compared", "files_differing", "dtype_mismatches"],
    ids=["FALSIFY-EXPORT-013"],
)
def export_command_writes_the_api_files(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """Seven exports of the session's init through ``python -m engine export`` (Hugging Face f32
    and f16, GGUF f32, f16, q8_0 and q4_0; two of them with a LoRA adapter merged) against the
    export functions' own files for the same model."""
    cli = cli_runner()
    work = fresh_dir(tmp_path, "export-cli-")
    adapter = trained_adapter(pretrained_init, instruction_data, work / "adapter-run", seed=seed)
    out = dict.fromkeys(("requests", "exit_codes_nonzero", "announced", "files_compared", "files_differing"), 0)
    out["dtype_mismatches"] = 0
    for n, (fmt, dtype, with_adapter) in enumerate(REQUESTS):
        name = f"{n}-{fmt}-{dtype}" + (".gguf" if fmt == "gguf" else "")
        target, reference = work / "command" / name, work / "api" / name
        args = ["export", pretrained_init, "-f", fmt, "-o", target, "--dtype", dtype]
        result = cli(*args, *(["--adapter", adapter] if with_adapter else []))
        out["requests"] += 1
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        # the one line the command writes: no progress bar or stray output beside it
        out["announced"] += " ".join(result.stderr.split()) == f"wrote {fmt} export to {target}"
        reference.parent.mkdir(parents=True, exist_ok=True)
        _reference(fmt, dtype, pretrained_init, adapter if with_adapter else None, reference)
        mine, theirs = _digests(target), _digests(reference)
        out["files_compared"] += len(theirs)
        out["files_differing"] += sum(mine.get(k) != v for k, v in theirs.items()) + len(set(mine) - set(theirs))
        out["dtype_mismatches"] += _dtype_mismatches(fmt, dtype, target)
    return out
