"""NF4 quantization of the engine's linear layers through bitsandbytes.

Three traps live here, each checked on this machine with bitsandbytes 0.50:

* ``Linear4bit`` and ``Params4bit`` default to ``quant_type="fp4"``; the engine always passes
  ``"nf4"`` (fault ``nf4_as_fp4`` keeps the default).
* On CPUs with AVX512-BF16, ``Linear4bit.forward`` in eval mode without grad repacks the weight
  in place into a CPU-only layout (``_convert_weight_packed_for_cpu``) and never undoes it for a
  later training forward: backward then runs through an op without autograd and the LoRA
  weights silently get no gradient.  The switch is the per-layer attribute
  ``support_avx512bf16_for_cpu`` (set in ``Linear4bit.__init__`` from ``has_avx512bf16()``),
  which :func:`quantize_model` turns off (fault ``bf16_repack_left_on`` leaves it on).
* bitsandbytes' native CPU dequantize kernel (0.50) assumes the 64-value blocks never cross a
  row: for a weight whose input width is not a multiple of the blocksize (the tiny preset's
  ``down_proj``, 176 wide) it returns values about twice as wrong as NF4 allows.  Such layers stay
  in full precision on CPU and are listed in ``model.nf4_kept_full_precision`` (a warning says so).
* PEFT only picks its 4-bit-aware LoRA layer when the model says ``is_loaded_in_4bit``;
  :func:`quantize_model` sets that flag (and ``quantization_method``) on the model.

Imports inside functions: bitsandbytes loads only when a model is quantized (it probes the CPU and
GPU on import).
"""

from __future__ import annotations

import logging
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from engine.faults import FAULTS

NF4_BLOCKSIZE = 64
M = TypeVar("M", bound=nn.Module)
_BNB_CPU_LOGGER = "bitsandbytes.backends.cpu.ops"


def import_bnb() -> types.ModuleType:
    """Import bitsandbytes without its "Failed to load CPU gemm_4bit_forward" warning.

    The message says an optional hub kernel is missing; bitsandbytes falls back to its own
    CPU kernels, so it carries no information for the engine's users.
    """
    log = logging.getLogger(_BNB_CPU_LOGGER)
    if FAULTS.active("bnb_import_silences_all"):  # pragma: no mutate
        log = logging.getLogger()  # pragma: no mutate -- the defect: every logger silenced while it imports
    previous = log.level
    log.setLevel(logging.ERROR)
    try:
        import bitsandbytes as bnb
    finally:
        log.setLevel(previous)
    return bnb


class NF4AlignmentWarning(UserWarning):
    """A layer was kept in full precision because the CPU NF4 kernel would get it wrong."""


@dataclass(frozen=True)
class NF4Config:
    blocksize: int = NF4_BLOCKSIZE
    double_quant: bool = True  # quantize the absmax constants too (QLoRA's "double quantization")
    compute_dtype: torch.dtype = torch.float32
    skip: tuple[str, ...] = ("lm_head",)  # module names (last component) kept in full precision


def to_nf4_linear(linear: nn.Linear, config: NF4Config, device: torch.device | str) -> nn.Module:
    """A ``bnb.nn.Linear4bit`` holding ``linear``'s weights in NF4 on ``device``."""
    if torch.device(device).type == "meta" or linear.weight.is_meta:
        raise ValueError(
            "NF4 quantization needs the weights' values, which the meta device does not hold: "
            "build the model on a real device and quantize it onto one"
        )
    bnb = import_bnb()
    quant_type = "fp4" if FAULTS.active("nf4_as_fp4") else "nf4"
    kwargs = {"quant_type": quant_type} if quant_type == "nf4" else {}  # the fault keeps bnb's fp4 default
    # The planted defect drops the request for double quantization: the absmax stays fp32.
    double_quant = config.double_quant and not FAULTS.active("double_quant_ignored")
    layer: Any = bnb.nn.Linear4bit(
        linear.in_features,
        linear.out_features,
        bias=linear.bias is not None,
        compute_dtype=config.compute_dtype,
        compress_statistics=double_quant,
        device="meta",
        **kwargs,
    )
    weight = linear.weight.detach().to(device)
    layer.weight = bnb.nn.Params4bit(
        weight.clone(),
        requires_grad=False,
        blocksize=config.blocksize,
        compress_statistics=double_quant,
        module=layer,
        **kwargs,
    )
    if linear.bias is not None:
        layer.bias = nn.Parameter(
            linear.bias.detach().to(device=weight.device, dtype=torch.float32).clone(),
            requires_grad=FAULTS.active("nf4_bias_trainable"),  # the defect: the frozen base's bias trains
        )
    layer = layer.to(weight.device)  # Params4bit quantizes on its first move
    set_cpu_repack(layer, enabled=FAULTS.active("bf16_repack_left_on"))
    return layer


def set_cpu_repack(layer: Any, *, enabled: bool) -> None:
    """Turn bitsandbytes' AVX512-BF16 eval-mode weight repack on or off for one layer."""
    if hasattr(layer, "support_avx512bf16_for_cpu"):
        layer.support_avx512bf16_for_cpu = enabled and bool(import_bnb().functional.has_avx512bf16())


def is_nf4_linear(module: nn.Module) -> bool:
    bnb = import_bnb()
    return isinstance(module, bnb.nn.Linear4bit)


def quantize_model(model: M, config: NF4Config | None = None, device: torch.device | str | None = None) -> M:
    """Replace every ``nn.Linear`` (except ``config.skip``) with NF4 in place; flag the model 4-bit.

    Returns the same model object.  ``device`` defaults to where the model's weights are.
    """
    cfg = config or NF4Config()
    target = torch.device(device) if device is not None else next(model.parameters()).device
    replacements: list[tuple[nn.Module, str, nn.Linear]] = []
    kept: list[str] = []
    for parent_name, parent in model.named_modules():
        for name, child in parent.named_children():
            if type(child) is not nn.Linear or name in cfg.skip:
                continue
            if cpu_dequant_misaligned(child.in_features, cfg.blocksize, target):
                kept.append(f"{parent_name}.{name}" if parent_name else name)
                if FAULTS.active("nf4_misaligned_siblings_kept"):  # pragma: no mutate
                    break  # pragma: no mutate -- the defect: the layers after a kept one are not looked at
                continue
            replacements.append((parent, name, child))
    if FAULTS.active("nf4_skipped"):
        replacements = []  # pragma: no mutate -- the defect: nothing swapped, the model still flagged 4-bit
    for parent, name, child in replacements:
        setattr(parent, name, to_nf4_linear(child, cfg, target))
    if kept:
        warnings.warn(
            f"{len(kept)} linear layer(s) kept in full precision: their input width is not a multiple of the "
            f"NF4 blocksize {cfg.blocksize}, which bitsandbytes' CPU dequantize kernel gets wrong "
            f"(e.g. {kept[0]})",
            NF4AlignmentWarning,
            stacklevel=2,
        )
    flagged: Any = model
    flagged.nf4_kept_full_precision = tuple(kept)
    # PEFT's dispatcher reads these two attributes to choose its bnb-aware LoRA layer.
    flags: Any = model
    flags.is_loaded_in_4bit = True
    flags.quantization_method = "bitsandbytes"
    return model


def cpu_dequant_misaligned(in_features: int, blocksize: int, device: torch.device) -> bool:
    """True where bitsandbytes' CPU kernel would dequantize this layer's weight wrongly."""
    return device.type == "cpu" and in_features % blocksize != 0


def nf4_layers(model: nn.Module) -> Iterator[tuple[str, Any]]:
    for name, module in model.named_modules():
        if is_nf4_linear(module):
            yield name, module


def dequantize_weight(layer: Any) -> torch.Tensor:
    """The full-precision weight an NF4 layer stands for (a new tensor; the layer is untouched)."""
    bnb = import_bnb()
    weight = layer.weight
    packed = getattr(weight.quant_state, "packing_format_for_cpu", False)
    # the defect: the repacked bytes are dequantized as if they were NF4 codes
    if FAULTS.active("nf4_packed_layout_unguarded"):  # pragma: no mutate
        packed = False  # pragma: no mutate
    if packed:
        raise RuntimeError("weight is in bitsandbytes' CPU-packed layout; the AVX512-BF16 repack was left on")
    return bnb.functional.dequantize_4bit(weight.data, weight.quant_state).float()


def dequantize_model(model: M) -> M:
    """Swap NF4 layers back to ``nn.Linear`` holding the dequantized weights, in place."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if is_nf4_linear(child):
                nf4: Any = child
                w = dequantize_weight(nf4)
                lin = nn.Linear(nf4.in_features, nf4.out_features, bias=nf4.bias is not None, device="meta")
                lin.weight = nn.Parameter(w, requires_grad=False)
                if nf4.bias is not None:
                    lin.bias = nn.Parameter(nf4.bias.detach().float().clone(), requires_grad=False)
                setattr(parent, name, lin)
    for attr in ("is_loaded_in_4bit", "quantization_method", "nf4_kept_full_precision"):
        if attr in model.__dict__:
            delattr(model, attr)
    return model


def quant_type_of(layer: Any) -> str:
    return str(layer.weight.quant_state.quant_type)


def nf4_storage_bytes(model: nn.Module) -> int:
    """Bytes actually held by the NF4 layers: packed codes, absmax (or its 8-bit form) and code books."""
    total = 0
    for _, layer in nf4_layers(model):
        total += layer.weight.data.numel() * layer.weight.data.element_size()
        state = layer.weight.quant_state
        total += state.absmax.numel() * state.absmax.element_size()
        total += state.code.numel() * state.code.element_size()
        if state.nested:
            total += state.state2.absmax.numel() * state.state2.absmax.element_size()
            total += state.state2.code.numel() * state.state2.code.element_size()
            total += state.offset.numel() * state.offset.element_size()
    return total
