"""A 4-bit weight bitsandbytes has repacked for AVX512-BF16 is refused by name, never read as NF4.

On a CPU with AVX512-BF16, an NF4 layer left with its repack on rewrites its weight in place on the
first eval forward without grad, into a layout that is no longer the 4-bit codes
``dequantize_4bit`` reads.  ``engine.quant.dequantize_weight`` (which merging, GGUF and HF export
go through) must refuse that weight with its own message instead of returning a different matrix.
The checker quantizes one linear layer through the engine, dequantizes it while its codes are
still NF4, turns the repack on, runs an eval forward, and asks again.  Where the bitsandbytes library
loaded has no repack (its CUDA build, which a machine with a GPU loads, answers that the CPU lacks
AVX512-BF16 whatever the CPU has), no weight is ever packed and the falsifier skips saying so.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import nn

from engine.quant import dequantize_weight, import_bnb, quantize_model, set_cpu_repack
from falsifiers.shared.packed_weights import MESSAGE
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker
from pv.outcomes import skip

NO_REPACK = (
    "the bitsandbytes library loaded here never repacks a CPU weight (its CUDA build, on a machine "
    "with a GPU, reports no AVX512-BF16): no packed weight to refuse"
)


def _packed(layer: Any) -> bool:
    return bool(getattr(layer.weight.quant_state, "packing_format_for_cpu", False))


@checker(observes=["packed_before", "unpacked_matches", "packed_after", "refusals_differing"], ids=["FALSIFY-EVAL-002"])
def packed_weight_refused(in_features: int, out_features: int, seed: int = 0) -> dict[str, Any]:
    """``unpacked_matches``: the weight dequantize_weight gives before the eval forward equals
    bitsandbytes' ``dequantize_4bit`` of the layer's codes; ``refusals_differing``: the refusal
    after it, read word for word (a weight returned instead counts as one)."""
    if not import_bnb().functional.has_avx512bf16():
        skip(NO_REPACK)
    gen = torch.Generator().manual_seed(seed)
    linear = nn.Linear(in_features, out_features)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(linear.weight.shape, generator=gen))
        linear.bias.copy_(torch.randn(linear.bias.shape, generator=gen))
    model = quantize_model(nn.Sequential(linear))
    layer: Any = model[0]
    packed_before = _packed(layer)
    reference = import_bnb().functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state).float()
    unpacked_matches = bool(torch.equal(dequantize_weight(layer), reference))
    set_cpu_repack(layer, enabled=True)
    layer.eval()
    with torch.no_grad():
        layer(torch.randn(2, in_features, generator=gen))
    packed_after = _packed(layer)
    differing = refusals_differing([(partial(dequantize_weight, layer), RuntimeError, MESSAGE)])
    return {
        "packed_before": int(packed_before),
        "unpacked_matches": int(unpacked_matches),
        "packed_after": int(packed_after),
        "refusals_differing": differing,
    }
