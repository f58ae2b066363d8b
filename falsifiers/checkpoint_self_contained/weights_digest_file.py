"""A base's weights digest is recomputable from its checkpoint file alone.

An adapter records the digest of the base it was trained on (``base_weights_sha256``), and
``load_adapted`` refuses any other base by it.  Its documented formula, sha256 over every tensor's
name, dtype, shape and bytes in name order with a tied head once, is written out here and applied
to the checkpoint file as safetensors reads it, with no engine model built: a user can then tell
which file an adapter belongs to without the engine.  The engine's ``weights_digest`` of the
loaded model, and the digest a fine-tune records in its adapter's manifest, must both be that
value, for a tied and an untied model in fp32 and one in bf16.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from engine.checkpoint import load_checkpoint, save_checkpoint, weights_digest
from engine.data import InstructionData
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def file_digest(path: Path) -> str:
    """sha256 over name, dtype, shape and bytes of each tensor the file holds, in name order."""
    h = hashlib.sha256()
    for name, tensor in sorted(load_file(str(path)).items()):
        h.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        h.update(tensor.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


@checker(
    observes=["checkpoints", "engine_digests_differing", "recorded_digests_differing", "digests_distinct"],
    ids=["FALSIFY-CKPT-008"],
)
def digest_from_the_file(
    tiny_model_factory: Any, engine_tokenizer: Any, instruction_data: InstructionData, tmp_path: Path
) -> dict[str, Any]:
    """Three tiny checkpoints (untied fp32, tied fp32, tied bf16; weights from seed 3): the file's
    digest against weights_digest of the loaded model and against the base digest a 2-step LoRA
    fine-tune on each records in its step manifest."""

    work = fresh_dir(tmp_path, "digest-")
    models = {
        "untied": tiny_model_factory(3, vocab_size=engine_tokenizer.vocab_size),
        "tied": tiny_model_factory(3, vocab_size=engine_tokenizer.vocab_size, tie_word_embeddings=True),
        "tied-bf16": tiny_model_factory(3, vocab_size=engine_tokenizer.vocab_size, tie_word_embeddings=True).to(
            torch.bfloat16
        ),
    }
    out: dict[str, Any] = {"checkpoints": 0, "engine_digests_differing": [], "recorded_digests_differing": []}
    digests = set()
    for name, model in models.items():
        path = Path(save_checkpoint(work / f"{name}.safetensors", model, engine_tokenizer, {}))
        want = file_digest(path)
        digests.add(want)
        out["checkpoints"] += 1
        if weights_digest(load_checkpoint(path).model) != want:
            out["engine_digests_differing"].append(name)
        run = trained_adapter(path, instruction_data, work / f"{name}-run")
        manifests = sorted(run.glob("step-*/manifest.json"))
        recorded = json.loads(manifests[-1].read_text())["base_weights_sha256"] if manifests else None
        if recorded != want:
            out["recorded_digests_differing"].append(name)
    out["digests_distinct"] = len(digests)
    return out
