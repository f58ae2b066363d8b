"""The bytes a linear layer holds for its weight, 4-bit (bitsandbytes NF4) layers included."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.quant import is_nf4_linear
from falsifiers.shared.training import unique_bytes


def nf4_weight_tensors(layer: Any, *, tables: bool = True) -> list[torch.Tensor]:
    """What a bitsandbytes 4-bit layer stores for its weight: packed codes and block absmax (8-bit
    plus their own fp32 absmax under double quantization), and with ``tables`` the per-layer
    constants that do not grow with the layer (the 16-entry NF4 code, the 256-entry code book of
    the nested quantization and its offset)."""
    state = layer.weight.quant_state
    out = [layer.weight.data, state.absmax]
    if state.nested:
        out.append(state.state2.absmax)
    if tables:
        out.append(state.code)
        if state.nested:
            out += [state.state2.code, state.offset]
    return out


def linear_weight_bytes(module: nn.Module, *, tables: bool = True) -> int:
    """Bytes a (possibly 4-bit) linear layer holds for its weight."""
    if is_nf4_linear(module):
        return unique_bytes(nf4_weight_tensors(module, tables=tables))
    lin: Any = module
    return int(lin.weight.numel() * lin.weight.element_size())
