"""Every engine path that dequantizes an NF4 weight refuses one in bitsandbytes' CPU-packed layout,
on any CPU.

bitsandbytes repacks a 4-bit weight for its AVX512-BF16 kernel on an eval forward (FALSIFY-EVAL-002
watches that forward, and can run only where the CPU has the instruction set).  The repack itself
is ``bitsandbytes.functional._convert_weight_packed_for_cpu``, plain tensor arithmetic that runs on
any CPU, and it is what ``Linear4bit.forward`` calls.  This checker packs layers with that function,
exactly as the forward does, and asks the engine's three dequantizing paths for them:
``dequantize_weight`` on the layer, ``dequantize_model`` on a model holding it, and
``merge_adapter(dequantize=True)`` on a QLoRA model whose LoRA-wrapped base layer is packed.  Each
must raise the guard's RuntimeError, word for word, instead of returning a matrix read from the
repacked bytes.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import nn

from engine.lora import LoraSettings, merge_adapter, prepare_qlora
from engine.quant import NF4Config, dequantize_model, dequantize_weight, import_bnb, nf4_layers, quantize_model
from falsifiers.shared.packed_weights import MESSAGE
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker
from pv.outcomes import skip


def _pack(layer: Any) -> bool:
    """Repack ``layer`` as ``Linear4bit.forward`` does; True when bitsandbytes flags it packed."""
    convert = getattr(import_bnb().functional, "_convert_weight_packed_for_cpu", None)
    if convert is None:
        skip("the bitsandbytes installed has no CPU-packed layout (no _convert_weight_packed_for_cpu)")
    layer.weight.data, layer.weight.quant_state = convert(layer.weight.data, layer.weight.quant_state)
    return bool(getattr(layer.weight.quant_state, "packing_format_for_cpu", False))


@checker(observes=["packed", "refusals_differing"], ids=["FALSIFY-NF4-006"])
def packed_layout_refused(tiny_model_factory: Any, seed: int = 0) -> dict[str, Any]:
    """``packed``: layers bitsandbytes flags packed after the repack (one per path);
    ``refusals_differing``: the three refusals, read word for word (a matrix returned instead
    counts as one)."""
    gen = torch.Generator().manual_seed(seed)
    linear = nn.Linear(64, 64)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(linear.weight.shape, generator=gen))
    single: Any = quantize_model(nn.Sequential(linear))[0]

    # a model whose only packed layer is one LoRA does not wrap: dequantize_model reads it
    plain = quantize_model(tiny_model_factory(seed), NF4Config(), "cpu")
    _, unwrapped = next((n, m) for n, m in nf4_layers(plain) if n.endswith("self_attn.o_proj"))

    # a QLoRA model whose packed layer is the base of a LoRA-wrapped projection: the merge reads it
    qlora = prepare_qlora(tiny_model_factory(seed), LoraSettings(r=4, targets=("q_proj",)), NF4Config(), device="cpu")
    _, wrapped = next((n, m) for n, m in nf4_layers(qlora) if n.endswith("q_proj.base_layer"))

    packed = sum(_pack(layer) for layer in (single, unwrapped, wrapped))
    differing = refusals_differing(
        [
            (partial(dequantize_weight, single), RuntimeError, MESSAGE),
            (partial(dequantize_model, plain), RuntimeError, MESSAGE),
            (partial(merge_adapter, qlora, dequantize=True), RuntimeError, MESSAGE),
        ]
    )
    return {"packed": packed, "refusals_differing": differing}
