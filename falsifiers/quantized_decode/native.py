"""The native block kernel (engine/native_blocks.cpp) against the dequantized matrix it encodes,
and its whole decoder layer for one token against the same layer run as separate calls.

The kernel rounds each input row to int16 per 32-weight block (the block's max |x| / 32767 a
step, so each input moves by at most max |x| / 65534 of its block) and accumulates in float32;
the weights are exactly the dequantized values.  So every output is within
``sum_b max_b|x| / 65534 * sum_{j in b} |w_nj|`` of float64 ``x @ W.T``, plus 2^-20 of
``|x| @ |W|.T`` for float32's roundings of each block's product, its scale and the sums, plus 1e-6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.generate import generate
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.native_blocks import DECODE_LAYER_CALLS, forced, kernel_status, separate_calls
from engine.tokenizer import EngineTokenizer
from falsifiers.quantized_decode.blocks import KINDS, SHAPES, layer_errors
from falsifiers.quantized_decode.model import PROMPTS, SHAPE
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.outcomes import skip

ROW_COUNTS = (1, 3, 4, 5)  # one row, fewer than a tile of 4, a tile, a tile and one more


def _require_native() -> None:
    """Skip, with the reason, where the native kernel does not run (whatever ENGINE_BLOCK_KERNEL says)."""
    with forced("auto"):
        status = kernel_status()
    if status.kernel != "native":
        skip(f"the native block kernel is not available here: {status.reason}")


def _int16_bound(x: torch.Tensor, w: np.ndarray, _blocks: object) -> torch.Tensor:
    rows, k = x.shape
    block_max = x.abs().double().reshape(rows, k // 32, 32).amax(-1)  # [rows, K/32]
    step = (block_max / 65534).repeat_interleave(32, dim=-1)  # each input's largest move
    aw = torch.from_numpy(np.abs(w).astype(np.float64))
    return step @ aw.T + 2.0**-20 * (x.abs().double() @ aw.T) + 1e-6


@checker(observes=["layers", "elements", "over_bound", "worst_share_of_bound", "kernel"], ids=["FALSIFY-QDEC-006"])
def native_layers_within_int16_rounding(seed: int = 0) -> dict[str, Any]:
    """Q4_0, Q4_1 and Q8_0 layers (the shapes of FALSIFY-QDEC-002, the first with a bias) through
    the native kernel, on 1, 3, 4 and 5 seeded input rows: every output within the bound of its
    int16 input rounding.  Skipped, with the reason, where the kernel does not build."""
    _require_native()
    out: dict[str, Any] = {"layers": 0, "elements": 0, "over_bound": 0, "worst_share_of_bound": 0.0}
    with forced("native"):
        out["kernel"] = kernel_status().kernel
        layer_errors(out, KINDS, SHAPES, seed, ROW_COUNTS, _int16_bound)
    return out


@checker(
    observes=["decode_layer_calls", "steps", "max_abs_logit_diff", "logit_scale", "tokens_differing"],
    ids=["FALSIFY-QDEC-007"],
)
def decode_layer_is_the_layers_calls(
    tiny_model_factory: Any, engine_tokenizer: EngineTokenizer, tmp_path: Path, seed: int = 0, n_tokens: int = 16
) -> dict[str, Any]:
    """The Q4_0 tiny model of FALSIFY-QDEC-003 decoded greedily twice from each prompt: each step's
    layers as one native call each (what generate does where the kernel runs) and as their separate
    calls; the logits of every step and the tokens side by side."""
    _require_native()
    model = tiny_model_factory(seed, std=0.2, **SHAPE)
    path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, "qdec-native-") / "tiny-q4_0.gguf", "q4_0")
    quantized = import_gguf(path, quantized=True).model
    out: dict[str, Any] = {"steps": 0, "max_abs_logit_diff": 0.0, "logit_scale": 0.0, "tokens_differing": 0}
    before = DECODE_LAYER_CALLS[0]
    with forced("native"):
        for prompt in PROMPTS:
            ids = torch.tensor([engine_tokenizer.encode(prompt, add_bos=True)])
            one = generate(quantized, ids, max_new_tokens=n_tokens, eos_token_id=[], return_logits=True)
            with separate_calls():
                calls = generate(quantized, ids, max_new_tokens=n_tokens, eos_token_id=[], return_logits=True)
            assert one.scores is not None and calls.scores is not None
            out["steps"] += one.scores.shape[1]
            out["max_abs_logit_diff"] = max(out["max_abs_logit_diff"], float((one.scores - calls.scores).abs().max()))
            out["logit_scale"] = max(out["logit_scale"], float(calls.scores.abs().max()))
            out["tokens_differing"] += sum(a != b for a, b in zip(one.new_tokens[0], calls.new_tokens[0], strict=True))
    out["decode_layer_calls"] = DECODE_LAYER_CALLS[0] - before
    return out
