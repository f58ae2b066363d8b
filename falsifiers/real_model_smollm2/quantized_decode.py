"""SmolLM2's own Q4_1 / Q8_0 blocks, run as they are (``import_gguf(quantized=True)``).

Against two references on the same file: the engine's float32 dequantization of it, whose only
difference is the quantized layers' bfloat16 rounding of their activations, scales and zeros; and
llama.cpp, which runs the same blocks against activations it quantizes itself (Q8).  Both are read
teacher-forced over the same chat sequences: the 3 chat prompts and, after each, 12 tokens the
model under test chose greedily, so each step compares the same context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.gguf_import import import_gguf
from falsifiers.real_model_smollm2.real_model import CHAT_PROMPTS, greedy_continuations, llama_cpp_gaps
from pv.checkers import checker


def _logits(model: Any, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits: torch.Tensor = model(torch.tensor([ids])).logits[0].float()
    return logits


@checker(
    observes=[
        "layers_kept", "positions", "max_abs_logit_diff", "logit_scale", "worst_gap", "argmax_agreement",
    ],
    ids=["FALSIFY-REAL-007"],
)  # fmt: skip
def quantized_logits_vs_dequantized(smollm2_gguf: Path, n_tokens: int = 12) -> dict[str, Any]:
    """The quantized import's logits against the float32 import's, at every position of the float32
    model's greedy chat sequences; how far each float32 greedy token trails the quantized argmax."""
    reference = import_gguf(smollm2_gguf)
    quantized = import_gguf(smollm2_gguf, quantized=True)
    worst, scale, gap, agree, positions = 0.0, 0.0, 0.0, 0, 0
    for ids, new in greedy_continuations(reference, n_tokens):
        sequence = ids + new
        want, got = _logits(reference.model, sequence), _logits(quantized.model, sequence)
        worst = max(worst, float((want - got).abs().max()))
        scale = max(scale, float(want.abs().max()))
        positions += len(sequence)
        for step, token in enumerate(new):
            row = got[len(ids) - 1 + step]
            gap = max(gap, float(row.max() - row[token]))
            agree += int(row.argmax()) == token
    return {
        "layers_kept": sum(dict(quantized.manifest["quantized"]).values()),
        "positions": positions,
        "max_abs_logit_diff": worst,
        "logit_scale": scale,
        "worst_gap": gap,
        "argmax_agreement": agree / (len(CHAT_PROMPTS) * n_tokens),
    }


@checker(observes=["steps", "worst_gap", "argmax_agreement"], ids=["FALSIFY-REAL-008"])
def quantized_greedy_vs_llama_cpp(smollm2_gguf: Path, smollm2_llama_cpp: Any, n_tokens: int = 12) -> dict[str, Any]:
    """Teacher-forced over the quantized engine's greedy chat continuations: how far each of its
    tokens trails llama.cpp's argmax on the same file."""
    quantized = import_gguf(smollm2_gguf, quantized=True)
    gap, agree, steps = llama_cpp_gaps(smollm2_llama_cpp, greedy_continuations(quantized, n_tokens))
    return {"steps": steps, "worst_gap": gap, "argmax_agreement": agree / steps}
