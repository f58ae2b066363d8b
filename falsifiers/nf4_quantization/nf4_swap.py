"""Which layers ``quantize_model`` swaps for NF4, which it keeps, and what it tells the user.

The model here is built so that every rule shows: a non-linear module before the linears of its
parent, a top-level linear whose input width is not a multiple of the blocksize (kept in full
precision on CPU) followed by an aligned one, the same inside a block, and a skipped name between
aligned layers.  The expected split is written out by hand; the model's flags are read against
transformers' own name for bitsandbytes quantization, and the layers' compute dtype and
``quant_state`` against bitsandbytes' ``Linear4bit`` attributes.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from engine.config import preset
from engine.model import build_model
from engine.quant import NF4Config, quantize_model
from pv.checkers import checker

META_REFUSAL = (
    "NF4 quantization needs the weights' values, which the meta device does not hold: "
    "build the model on a real device and quantize it onto one"
)
EXPECTED_WARNING = (
    "2 linear layer(s) kept in full precision: their input width is not a multiple of the NF4 blocksize 64, "
    "which bitsandbytes' CPU dequantize kernel gets wrong (e.g. odd)"
)


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.wide = nn.Linear(96, 64)  # 96 is not a multiple of 64: kept
        self.up = nn.Linear(64, 128)
        self.lm_head = nn.Linear(128, 64)  # skipped by name
        self.down = nn.Linear(128, 64)


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 64)
        self.odd = nn.Linear(80, 96)  # kept, at the top level
        self.proj = nn.Linear(64, 96)
        self.block = _Block()


def _aligned() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))


@checker(
    observes=[
        "swapped",
        "kept_full_precision",
        "listed_kept",
        "warnings",
        "returned_same",
        "flags",
        "compute_dtypes",
        "quant_state_shared",
        "aligned_warnings",
        "aligned_kept",
        "meta_refusals",
    ],
    ids=["FALSIFY-NF4-005"],
)
def swaps_what_it_can(seed: int = 0) -> dict[str, Any]:
    """quantize_model on the model above (default settings, then compute_dtype bf16 on a copy of the
    aligned model), and on the meta device three ways."""
    # references (bitsandbytes, transformers): they load only in the checkers that use them
    from bitsandbytes.nn import Linear4bit
    from transformers.utils.quantization_config import QuantizationMethod

    torch.manual_seed(seed)
    model = _Model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        returned = quantize_model(model, device="cpu")
    modules = dict(model.named_modules())
    swapped = sorted(name for name, m in modules.items() if isinstance(m, Linear4bit))
    kept = sorted(name for name, m in modules.items() if type(m) is nn.Linear)
    # is_loaded_in_4bit, and quantization_method as transformers names bitsandbytes quantization
    flags = [
        getattr(model, "is_loaded_in_4bit", None),
        getattr(model, "quantization_method", None) == QuantizationMethod.BITS_AND_BYTES.value,
    ]
    aligned = _aligned()
    with warnings.catch_warnings(record=True) as aligned_caught:
        warnings.simplefilter("always")
        quantize_model(aligned, device="cpu")
    bf16 = _aligned()
    quantize_model(bf16, NF4Config(compute_dtype=torch.bfloat16), device="cpu")
    layers: list[Any] = [
        m for m in (*modules.values(), *aligned.modules(), *bf16.modules()) if isinstance(m, Linear4bit)
    ]
    refusals: list[list[Any]] = []
    for label, make, device in (
        ("a real model onto meta", _aligned, "meta"),
        ("a meta model", lambda: build_model(preset("tiny"), device="meta"), None),
        ("a meta model onto cpu", lambda: build_model(preset("tiny"), device="meta"), "cpu"),
    ):
        try:
            quantize_model(make(), device=device)
            refusals.append([label, None])
        except ValueError as exc:
            refusals.append([label, str(exc) == META_REFUSAL])
    return {
        "swapped": swapped,
        "kept_full_precision": kept,
        "listed_kept": list(getattr(model, "nf4_kept_full_precision", ["(missing)"])),
        "warnings": [[w.category.__name__, str(w.message) == EXPECTED_WARNING] for w in caught],
        "returned_same": returned is model,
        "flags": flags,
        "compute_dtypes": [
            sorted({str(m.compute_dtype) for m in aligned.modules() if isinstance(m, Linear4bit)}),
            sorted({str(m.compute_dtype) for m in bf16.modules() if isinstance(m, Linear4bit)}),
        ],
        "quant_state_shared": sum(m.quant_state is m.weight.quant_state for m in layers) == len(layers),
        "aligned_warnings": len(aligned_caught),
        "aligned_kept": list(getattr(aligned, "nf4_kept_full_precision", ["(missing)"])),
        "meta_refusals": refusals,
    }
