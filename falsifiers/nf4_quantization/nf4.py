"""NF4 quantization: round-trip error, storage cost, and code-for-code agreement with bitsandbytes.

Every checker quantizes through the engine's own path (:func:`engine.quant.to_nf4_linear` /
:func:`engine.quant.quantize_model`) inside its call, so a fault in that path shows up here.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from engine.config import preset
from engine.model import build_model
from engine.quant import (
    NF4AlignmentWarning,
    NF4Config,
    dequantize_model,
    dequantize_weight,
    import_bnb,
    nf4_layers,
    nf4_storage_bytes,
    quantize_model,
    to_nf4_linear,
)
from pv.checkers import checker

# PEFT and the engine read these to treat a model as 4-bit; a dequantized model must not carry them.
QUANTIZED_FLAGS = ("is_loaded_in_4bit", "quantization_method", "nf4_kept_full_precision")


def _gaussian_linear(numel: int, blocksize: int, seed: int) -> tuple[nn.Linear, torch.Tensor]:
    """A bias-free linear layer holding ``numel`` N(0, 1) weights, rows a multiple of the blocksize wide."""
    if numel % blocksize:
        raise ValueError(f"numel {numel} is not a multiple of the blocksize {blocksize}")
    width = blocksize * 8 if numel % (blocksize * 8) == 0 else blocksize
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(numel // width, width, generator=gen)
    linear = nn.Linear(width, numel // width, bias=False)
    with torch.no_grad():
        linear.weight.copy_(weight)
    return linear, weight


@checker(observes=["rel_mean_abs_err", "max_abs_err"], ids=["FALSIFY-NF4-001"])
def roundtrip_error(numel: int, blocksize: int, seed: int = 0) -> dict[str, Any]:
    """Quantize N(0,1) weights with the engine's NF4 layer, dequantize, and measure the error."""
    linear, weight = _gaussian_linear(numel, blocksize, seed)
    layer = to_nf4_linear(linear, NF4Config(blocksize=blocksize), "cpu")
    restored = dequantize_weight(layer).reshape(weight.shape)
    err = (weight - restored).abs()
    return {
        "rel_mean_abs_err": float(err.mean() / weight.abs().mean()),
        "max_abs_err": float(err.max()),
    }


def _bytes_per_param(linear: nn.Linear, config: NF4Config) -> float:
    layer = to_nf4_linear(linear, config, "cpu")
    holder = nn.Sequential(layer)
    return nf4_storage_bytes(holder) / linear.weight.numel()


@checker(observes=["bytes_per_param", "bytes_per_param_dq"], ids=["FALSIFY-NF4-002"])
def storage_bytes(numel: int, blocksize: int, seed: int = 0) -> dict[str, Any]:
    """Bytes the engine's NF4 layer holds per parameter, without and with double quantization."""
    linear, _ = _gaussian_linear(numel, blocksize, seed)
    return {
        "bytes_per_param": _bytes_per_param(linear, NF4Config(blocksize=blocksize, double_quant=False)),
        "bytes_per_param_dq": _bytes_per_param(linear, NF4Config(blocksize=blocksize, double_quant=True)),
    }


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


@checker(
    observes=[
        "layers_compared",
        "code_mismatches",
        "absmax_max_diff",
        "layout_mismatches",
        "layers_kept_full_precision",
    ],
    ids=["FALSIFY-NF4-003"],
)
def codes_match_bitsandbytes(tiny_model_factory: Any, preset: str, seed: int = 0) -> dict[str, Any]:
    """Quantize a model with the engine, re-quantize each original weight with bitsandbytes, compare.

    ``code_mismatches`` counts packed bytes (two 4-bit codes each) that differ; ``absmax_max_diff``
    is the largest difference over the block scales and, with double quantization, the
    second-level scales and offset; ``layout_mismatches`` counts layers whose tensors differ in
    shape, dtype or nesting (their values are then not compared).
    """
    if preset != "tiny":
        raise ValueError("only the tiny preset is built by the shared model factory")
    model = tiny_model_factory(seed)
    originals = {name: m.weight.detach().clone() for name, m in model.named_modules() if type(m) is nn.Linear}
    config = NF4Config()
    with warnings.catch_warnings():
        # The tiny preset's down_proj stays full precision on CPU; the observation records it.
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        quantize_model(model, config, device="cpu")
    functional = import_bnb().functional
    compared = 0
    mismatches = 0
    absmax_diff = 0.0
    layout = 0
    for name, layer in nf4_layers(model):
        codes, state = functional.quantize_4bit(
            originals[name],
            blocksize=config.blocksize,
            quant_type="nf4",
            compress_statistics=config.double_quant,
        )
        ours, theirs = layer.weight.quant_state, state
        compared += 1
        pairs = [(layer.weight.data, codes), (ours.absmax, theirs.absmax)]
        if ours.nested and theirs.nested:
            pairs += [(ours.state2.absmax, theirs.state2.absmax), (ours.offset.reshape(-1), theirs.offset.reshape(-1))]
        if bool(ours.nested) != bool(theirs.nested) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in pairs):
            layout += 1
            continue
        mismatches += int((layer.weight.data != codes).sum())
        absmax_diff = max(absmax_diff, *(_max_diff(a, b) for a, b in pairs[1:]))
    return {
        "layers_compared": compared,
        "code_mismatches": mismatches,
        "absmax_max_diff": absmax_diff,
        "layout_mismatches": layout,
        "layers_kept_full_precision": len(getattr(model, "nf4_kept_full_precision", ())),
    }


@checker(
    observes=[
        "nf4_layers",
        "blocksize_honoured",
        "nf4_params_trainable",
        "nf4_biases_not_fp32",
        "dequantized_params_trainable",
        "dequantized_differing",
        "quantized_flags_left",
    ],
    ids=["FALSIFY-NF4-004"],
)
def biased_base_frozen(blocksize: int, seed: int = 0) -> dict[str, Any]:
    """Quantize a bf16 qwen2-style model (q/k/v biases) at a non-default blocksize: every NF4 layer
    uses that blocksize, holds nothing trainable, keeps its bias in fp32; the linears
    ``dequantize_model`` gives back are frozen too."""

    torch.manual_seed(seed)
    config = preset("tiny", architecture="qwen2", attention_bias=True, tie_word_embeddings=True)
    model = build_model(config).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        quantize_model(model, NF4Config(blocksize=blocksize), device="cpu")
    layers = dict(nf4_layers(model))
    honoured = sum(int(layer.weight.quant_state.blocksize) == blocksize for layer in layers.values())
    trainable = sum(p.requires_grad for layer in layers.values() for p in layer.parameters())
    not_fp32 = sum(layer.bias.dtype != torch.float32 for layer in layers.values() if layer.bias is not None)
    # what each layer holds, read before dequantize_model replaces it
    expected = {name: (dequantize_weight(layer), layer.bias) for name, layer in layers.items()}
    dequantize_model(model)
    restored = {name: dict(model.named_modules())[name] for name in layers}
    differing = 0
    for name, (weight, bias) in expected.items():
        linear = restored[name]
        differing += type(linear) is not nn.Linear or not torch.equal(
            linear.weight, weight.reshape(linear.weight.shape)
        )
        differing += (bias is None) != (linear.bias is None) or (
            bias is not None and not torch.equal(linear.bias, bias.float())
        )
    return {
        "nf4_layers": len(layers),
        "blocksize_honoured": honoured,
        "nf4_params_trainable": trainable,
        "nf4_biases_not_fp32": not_fp32,
        "dequantized_params_trainable": sum(p.requires_grad for m in restored.values() for p in m.parameters()),
        "dequantized_differing": differing,
        # PEFT and the engine read these to treat a model as 4-bit; a dequantized model must not carry them
        "quantized_flags_left": sum(
            a in model.__dict__ for a in ("is_loaded_in_4bit", "quantization_method", "nf4_kept_full_precision")
        ),
    }
