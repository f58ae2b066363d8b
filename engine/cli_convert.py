"""``python -m engine import | merge``: bring a Hugging Face or GGUF model in; fold an adapter into a checkpoint.

``import`` reads a Llama/Qwen2 folder (``config.json``, safetensors shards, ``tokenizer.json``,
optional ``generation_config.json``) or a llama.cpp GGUF file (:mod:`engine.gguf_import`) and
writes one self-contained engine checkpoint with exact logits; ``merge`` writes base + adapter as a
full checkpoint whose manifest names both.  Bad input prints ``error: ...`` and exits 2, as every
engine command does.

Imports inside functions: each command imports torch, rich and the engine modules it uses when it
runs, so `python -m engine --help`, a refused option and shell completion answer without loading
torch (`python -X importtime -m engine --help` shows no torch).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated

import typer

from engine import cli_support as cli
from engine.app import app
from engine.cli_support import CHECKPOINT_TORCH_DTYPES, CheckpointDtype, OtherBaseOption


@app.command("import")
def import_model(
    source: Annotated[
        Path,
        typer.Argument(
            help="A Hugging Face model folder, a GGUF file, or package:NAME for the GGUF an installed "
            "package ships (Llama or Qwen2 architecture)."
        ),
    ],
    out: Annotated[Path, typer.Argument(help="The engine checkpoint to write (.safetensors).")],
    dtype: Annotated[
        CheckpointDtype | None,
        typer.Option(
            help="Store weights as f32, f16 or bf16 (default: as found; a GGUF's Q4_0, Q4_1 and Q8_0 "
            "matrices kept in their blocks, the rest f32; a dtype dequantizes them)."
        ),
    ] = None,
) -> None:
    """Import a Hugging Face folder or a GGUF file as one engine checkpoint (architecture, tokenizer,
    chat template and EOS ids kept; a GGUF's Q4_0, Q4_1 and Q8_0 matrices kept in their blocks unless
    --dtype asks for float weights, its other quantized types dequantized)."""
    import torch

    from engine.checkpoint import save_checkpoint

    torch_dtype = getattr(torch, CHECKPOINT_TORCH_DTYPES[dtype.value]) if dtype else None
    from engine.gguf_import import resolve_source

    source = cli.guarded(lambda: resolve_source(source))
    with cli.progress(f"importing {source}") as status:
        if source.is_file():
            from engine.gguf_import import import_gguf

            loaded = cli.guarded(lambda: import_gguf(source, dtype=torch_dtype, quantized=torch_dtype is None))
            digest = str(loaded.manifest["source_sha256"])
        else:
            from engine.hf_interop import import_hf

            loaded = cli.guarded(lambda: import_hf(source, dtype=torch_dtype))
            digest = cli.guarded(lambda: _folder_digest(source))
        status(f"writing {out}")
        manifest = {**loaded.manifest, "kind": "import", "source_sha256": digest}
        target = cli.guarded(lambda: save_checkpoint(out, loaded.model, loaded.tokenizer, manifest))
    cfg = loaded.config
    cli.out.print(
        json.dumps(
            {
                "checkpoint": str(target),
                "architecture": cfg.to_dict(),
                "parameters": loaded.model.num_parameters(),
                "eos_ids": list(cfg.eos_ids),
                "source_sha256": digest,
                **({"quantized": loaded.manifest["quantized"]} if "quantized" in loaded.manifest else {}),
            },
            indent=2,
            sort_keys=True,
        ),
        markup=False,
    )


def _folder_digest(folder: Path) -> str:
    """sha256 over the folder's files (name and bytes, sorted): which exact export was imported."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            hashlib.file_digest(f, lambda: h)  # streams the file's bytes into h itself
    return h.hexdigest()


@app.command()
def merge(
    base: Annotated[Path, typer.Argument(help="The base checkpoint the adapter was trained on.")],
    adapter: Annotated[Path, typer.Argument(help="The adapter: its run, step or adapter folder.")],
    out: Annotated[Path, typer.Argument(help="The merged checkpoint to write (.safetensors).")],
    nf4: Annotated[
        bool | None,
        typer.Option("--nf4/--no-nf4", help="Merge onto the NF4-quantized base (default: for QLoRA adapters)."),
    ] = None,
    allow_other_base: OtherBaseOption = False,
) -> None:
    """Fold an adapter into its base: a full checkpoint holding W + B·A·alpha/r (the base must be
    the one the adapter was trained on, by weights digest)."""
    from engine.adapters import find_adapter, merge_to_checkpoint, unchecked_base_note

    with cli.progress(f"merging {adapter} into {base.name}"):
        folder = cli.guarded(lambda: find_adapter(adapter))
        target = cli.guarded(lambda: merge_to_checkpoint(base, folder, out, nf4, allow_other_base))
    unchecked = unchecked_base_note(folder)
    if unchecked is not None:
        cli.err.print(f"warning: {unchecked}", markup=False)
    cli.err.print(f"wrote merged checkpoint {target}", markup=False)
