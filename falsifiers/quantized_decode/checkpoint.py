"""A model decoded from its quantized blocks, kept in an engine checkpoint: the tiny model of
``.model`` with its head tied to the embedding (as SmolLM2's is), exported as Q4_0, imported with
its blocks, saved and loaded again.

The checkpoint holds each layer's blocks byte for byte as the GGUF file does (``<layer>.raw``,
metadata ``quantized``), and the tied embedding once, as the head's blocks: the loaded model must be
the imported one exactly (its blocks, its embedding, its logits).  ``python -m engine import`` keeps
the blocks by default and dequantizes with ``--dtype f32``; training, an adapter or an export of a
model in blocks is refused with the way out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import QUANTIZED, load_checkpoint, read_header, save_checkpoint
from engine.errors import BlocksError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.lora import apply_lora
from engine.quantized import BlockLinear
from engine.tokenizer import EngineTokenizer
from falsifiers.quantized_decode.model import PROMPTS, SHAPE
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

FIX = "import the file with --dtype f32 (or f16, bf16) to dequantize them"


def _blocks(model: torch.nn.Module) -> dict[str, BlockLinear]:
    return {name: m for name, m in model.named_modules() if isinstance(m, BlockLinear)}


@checker(
    observes=[
        "layers_in_blocks", "raw_bytes_differing", "embedding_max_abs_diff", "max_abs_logit_diff", "size_ratio",
        "dequantized_said", "cli_layers_in_blocks", "cli_f32_layers_in_blocks", "refusals_naming_the_fix",
        "export_refused",
    ],
    ids=["FALSIFY-QDEC-004"],
)  # fmt: skip
def blocks_kept_in_an_engine_checkpoint(
    tiny_model_factory: Any, engine_tokenizer: EngineTokenizer, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """The Q4_0 export imported with its blocks, through save_checkpoint and load_checkpoint."""
    work = fresh_dir(tmp_path, "qckpt-")
    model = tiny_model_factory(seed, std=0.2, tie_word_embeddings=True, **SHAPE)  # as SmolLM2's head is
    path = export_gguf(model, engine_tokenizer, work / "tiny-q4_0.gguf", "q4_0")
    imported = import_gguf(path, quantized=True)
    saved = save_checkpoint(work / "blocks.safetensors", imported.model, imported.tokenizer, imported.manifest)
    loaded = load_checkpoint(saved)
    float32 = import_gguf(path)
    reference = save_checkpoint(work / "f32.safetensors", float32.model, float32.tokenizer, float32.manifest)
    before, after = _blocks(imported.model), _blocks(loaded.model)
    out: dict[str, Any] = {"layers_in_blocks": len(after) if sorted(after) == sorted(before) else -1}
    out["raw_bytes_differing"] = sum(_bytes_differing(before[name], after[name]) for name in before if name in after)
    embeddings = imported.model.model.embed_tokens.weight, loaded.model.model.embed_tokens.weight
    out["embedding_max_abs_diff"] = float((embeddings[0] - embeddings[1]).detach().abs().max())
    out["max_abs_logit_diff"] = 0.0
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = torch.tensor([engine_tokenizer.encode(prompt, add_bos=True)])
            diff = (imported.model(ids).logits - loaded.model(ids).logits).abs().max()
            out["max_abs_logit_diff"] = max(out["max_abs_logit_diff"], float(diff))
    out["size_ratio"] = saved.stat().st_size / reference.stat().st_size
    # the embedding's Q4_0 tensor is the one held as float32 too (its lookups read float rows)
    out["dequantized_said"] = loaded.manifest.get("dequantized") == {"Q4_0": 1}
    run = cli_runner()
    counts = []
    for name, extra in (("cli-blocks", ()), ("cli-f32", ("--dtype", "f32"))):
        result = run("import", path, work / f"{name}.safetensors", *extra)
        meta = read_header(work / f"{name}.safetensors")[1] if result.exit_code == 0 else {}
        counts.append(len(_json_map(meta.get(QUANTIZED))) if result.exit_code == 0 else -1)
    out["cli_layers_in_blocks"], out["cli_f32_layers_in_blocks"] = counts
    out["refusals_naming_the_fix"] = 0
    for attempt in (lambda: apply_lora(loaded.model), lambda: export_gguf(loaded.model, loaded.tokenizer, work / "x")):
        try:
            attempt()
        except BlocksError as exc:
            out["refusals_naming_the_fix"] += str(exc).endswith(FIX)
    result = run("export", saved, "--format", "hf", "--output", work / "hf")
    out["export_refused"] = refused_cleanly(result, ["--dtype f32"], [work / "hf"])
    return out


def _bytes_differing(a: BlockLinear, b: BlockLinear) -> int:
    """Bytes of ``a``'s blocks that ``b`` holds otherwise (all of them when the shapes differ)."""
    if a.raw is None or b.raw is None:
        raise AssertionError("a model's own layers keep their blocks")
    return int((a.raw != b.raw).sum()) if a.raw.shape == b.raw.shape else a.raw.numel()


def _json_map(text: str | None) -> dict[str, str]:
    return dict(json.loads(text)) if text else {}
