"""Linear layers that keep a GGUF file's quantized blocks and multiply through torch's int kernels.

A 4-bit GGUF file imported as float32 reads 8x the bytes per token it needs: decoding one token is
one matrix-vector product per weight, so its speed is the bytes read.  Here a ``Q4_0`` or ``Q4_1``
matrix stays in its 32-weight blocks and runs through ``torch.ops.aten._weight_int4pack_mm_for_cpu``,
which computes ``w = (q - 8) * scale + zero`` per group of 32 along the input:

* ``Q4_0``: ``w = d * (q - 8)``, so ``scale = d`` and ``zero = 0``;
* ``Q4_1``: ``w = d * q + m = d * (q - 8) + (m + 8 d)``, so ``scale = d`` and ``zero = m + 8 d``.

A ``Q8_0`` matrix (``w = d * q``, q an int8) runs block column by block column through
``torch.ops.aten._weight_int8pack_mm``, whose scale is per output row: each of the K/32 calls reads
one block of every row with that block's scales.  Both kernels take bfloat16 activations (their
float32 paths are slower than a float32 matmul on this class of CPU), so a layer rounds its input,
and its scales and zeros, to bfloat16 and returns its output in the input's dtype; what that
rounding costs is claimed against the float32 dequantization of the same file
(contracts/real-model-smollm2-v1.yaml, FALSIFY-REAL-*).

The blocks are read with numpy from gguf-py's raw tensor bytes: a row of N output weights holds
K/32 blocks of 18 (Q4_0), 20 (Q4_1) or 34 (Q8_0) bytes: a float16 ``d``, for Q4_1 a float16 ``m``,
then the codes (Q4: 16 bytes, the low nibbles weights 0-15 and the high nibbles 16-31; Q8: 32 int8).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from engine.errors import BlocksError
from engine.faults import FAULTS

GROUP = 32  # weights per block, along the input dimension
QuantKind = Literal["Q4_0", "Q4_1", "Q8_0"]
BLOCK_BYTES: dict[str, int] = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}
KINDS: tuple[str, ...] = tuple(BLOCK_BYTES)
ACTIVATION_DTYPE = torch.bfloat16  # what both kernels are fast with


@dataclass(frozen=True)
class QuantBlocks:
    """One matrix's blocks as the file holds them, unpacked: codes and per-block scale and zero."""

    kind: str
    raw: np.ndarray  # [N, K / 32 * block bytes] uint8: the blocks as the file stores them
    codes: np.ndarray  # [N, K]: 0..15 for Q4, -128..127 for Q8
    scales: np.ndarray  # [N, K / 32] float32 (the file's float16 d, exactly)
    zeros: np.ndarray  # [N, K / 32] float32: the weight at code 8 for Q4 (m + 8 d, or 0); 0 for Q8

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.codes.shape[0]), int(self.codes.shape[1])

    def dequantize(self) -> np.ndarray:
        """The float32 matrix the blocks encode (what gguf-py's dequantize gives)."""
        n, k = self.shape
        offset = 8 if self.kind != "Q8_0" else 0
        codes = self.codes.reshape(n, k // GROUP, GROUP).astype(np.float32) - offset
        return (codes * self.scales[..., None] + self.zeros[..., None]).reshape(n, k).astype(np.float32)

    def rows(self, order: np.ndarray) -> QuantBlocks:
        """The same blocks with the output rows in ``order`` (the llama q/k un-permutation)."""
        return QuantBlocks(self.kind, self.raw[order], self.codes[order], self.scales[order], self.zeros[order])


def row_bytes(kind: str, k: int) -> int:
    """Bytes of one row of ``k`` weights in ``kind`` blocks."""
    return k // GROUP * BLOCK_BYTES[kind]


def unpack(kind: str, raw: np.ndarray, shape: tuple[int, int]) -> QuantBlocks:
    """The blocks of a ``kind`` tensor of ``shape`` (N rows of K weights) from its raw bytes."""
    if kind not in BLOCK_BYTES:
        raise ValueError(f"{kind} blocks are not kept quantized; supported: {', '.join(KINDS)}")
    n, k = shape
    if k % GROUP:
        raise ValueError(f"a {kind} row of {k} weights is not a whole number of {GROUP}-weight blocks")
    if np.asarray(raw).size != n * row_bytes(kind, k):
        raise ValueError(f"{np.asarray(raw).size} bytes are not the {kind} blocks of a [{n}, {k}] matrix")
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(n, k // GROUP, BLOCK_BYTES[kind])
    stored = blocks.reshape(n, -1)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    if kind == "Q8_0":
        codes = blocks[..., 2:].copy().view(np.int8).astype(np.int16)
        return QuantBlocks(kind, stored, codes.reshape(n, k), d, np.zeros_like(d))
    qs = blocks[..., -16:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int16)
    if FAULTS.active("q4_block_halves_swapped"):  # the defect: the high nibbles read as weights 0-15
        codes = np.concatenate([qs >> 4, qs & 0x0F], axis=-1).astype(np.int16)  # pragma: no mutate
    if kind == "Q4_1":
        m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
        zeros = m + 8 * d
        if FAULTS.active("q4_1_zero_off_by_8"):  # the defect: m taken as the weight at code 8
            zeros = m  # pragma: no mutate
    else:
        zeros = np.zeros_like(d)
    return QuantBlocks(kind, stored, codes.reshape(n, k), d, zeros)


class BlockLinear(nn.Module, ABC):
    """A linear layer that multiplies through a kernel of quantized blocks (bfloat16 activations);
    its output in the input's dtype, plus its bias."""

    raw: torch.Tensor | None  # the file's blocks (QuantBlocks.raw): what a checkpoint stores

    def __init__(
        self, raw: np.ndarray | None, in_features: int, out_features: int, kind: str, bias: torch.Tensor | None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.kind = in_features, out_features, kind
        # the state dict holds the file's bytes; the kernels' layouts below are derived from them
        self.register_buffer("raw", torch.from_numpy(np.array(raw, dtype=np.uint8)) if raw is not None else None)
        self.bias = nn.Parameter(bias.detach().clone(), requires_grad=False) if bias is not None else None

    @abstractmethod
    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        """``flat`` ([rows, in] bfloat16) times the blocks' matrix transposed: [rows, out]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.multiply(x.reshape(-1, self.in_features).to(ACTIVATION_DTYPE))
        out = out.to(x.dtype).reshape(*x.shape[:-1], self.out_features)
        return out + self.bias.to(x.dtype) if self.bias is not None else out


class Int4Linear(BlockLinear):
    """A linear layer of Q4_0 / Q4_1 blocks through torch's int4 kernel."""

    packed: torch.Tensor  # the kernel's own layout of the codes
    scale_zeros: torch.Tensor  # [K/32, N, 2] bfloat16

    def __init__(
        self,
        raw: np.ndarray | None,
        packed: torch.Tensor,
        scale_zeros: torch.Tensor,
        kind: str,
        bias: torch.Tensor | None,
    ) -> None:
        groups, out_features, _ = scale_zeros.shape
        super().__init__(raw, groups * GROUP, out_features, kind, bias)
        self.register_buffer("packed", packed, persistent=False)
        self.register_buffer("scale_zeros", scale_zeros, persistent=False)

    @classmethod
    def from_blocks(cls, blocks: QuantBlocks, bias: torch.Tensor | None = None) -> Int4Linear:
        n, k = blocks.shape
        codes = torch.from_numpy(blocks.codes.astype(np.int32))
        pairs = np.stack([blocks.scales, blocks.zeros], axis=-1)  # [N, K/32, 2]
        layout = pairs.transpose(1, 0, 2)  # the kernel's [K/32, N, 2]
        if FAULTS.active("q4_scales_transposed"):  # the defect: scale and zero pairs in the file's row order
            layout = pairs.reshape(k // GROUP, n, 2)  # pragma: no mutate
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)
        scale_zeros = torch.from_numpy(np.ascontiguousarray(layout)).to(ACTIVATION_DTYPE)
        return cls(blocks.raw, packed, scale_zeros, blocks.kind, bias)

    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed, GROUP, self.scale_zeros)


# torch's CPU int4 packing lays rows out in tiles of 64: two packed matrices concatenate into the
# packing of their stacked rows only when each but the last holds whole tiles (checked by
# falsifiers/quantized_decode: 64 + 32 rows do, 32 + 32 and 96 + 32 do not)
ROW_TILE = 64


def can_stack(layers: Sequence[Int4Linear]) -> bool:
    """Whether :func:`stacked` can join ``layers``: one input width, whole row tiles but the last."""
    first = layers[0]
    return all(layer.in_features == first.in_features for layer in layers) and all(
        layer.out_features % ROW_TILE == 0 for layer in layers[:-1]
    )


def stacked(layers: Sequence[Int4Linear]) -> Int4Linear:
    """One layer computing ``layers``' outputs side by side (their rows stacked), in one kernel call:
    the packed rows and their scale pairs concatenate (see :data:`ROW_TILE`)."""
    if not can_stack(layers):
        raise ValueError(f"layers of {[m.out_features for m in layers]} rows cannot be stacked")
    biases = [layer.bias for layer in layers]
    bias = None
    if any(b is not None for b in biases):
        parts = [
            b.detach() if b is not None else torch.zeros(layer.out_features)
            for b, layer in zip(biases, layers, strict=True)
        ]
        bias = torch.cat(parts)
    return Int4Linear(
        None,  # decoding's own layer, never saved
        torch.cat([layer.packed for layer in layers]),
        torch.cat([layer.scale_zeros for layer in layers], dim=1),
        "+".join(sorted({layer.kind for layer in layers})),
        bias,
    )


class Int8BlockLinear(BlockLinear):
    """A linear layer of Q8_0 blocks: one int8 kernel call per block column, summed in float32."""

    codes: torch.Tensor  # [K/32, N, 32] int8
    scales: torch.Tensor  # [K/32, N] bfloat16

    def __init__(self, blocks: QuantBlocks, bias: torch.Tensor | None = None) -> None:
        n, k = blocks.shape
        super().__init__(blocks.raw, k, n, blocks.kind, bias)
        codes = torch.from_numpy(blocks.codes.astype(np.int8))
        columns = torch.stack(codes.split(GROUP, dim=1)).contiguous()  # [K/32, N, 32]
        self.register_buffer("codes", columns, persistent=False)
        scales = torch.from_numpy(blocks.scales.T.copy()).to(ACTIVATION_DTYPE)  # [K/32, N]
        self.register_buffer("scales", scales, persistent=False)

    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(flat.shape[0], self.out_features, dtype=torch.float32, device=flat.device)
        shift = 1 if FAULTS.active("q8_block_scales_shifted") else 0  # the defect: a block boundary moved
        blocks = len(self.codes)
        for b, part in enumerate(flat.split(GROUP, dim=1)):
            scales = self.scales[(b + shift) % blocks]
            out += torch.ops.aten._weight_int8pack_mm(part.contiguous(), self.codes[b], scales).float()
        return out


def quantized_linear(blocks: QuantBlocks, bias: torch.Tensor | None = None) -> BlockLinear:
    """The layer that runs ``blocks`` as they are: Int4Linear for Q4_0 / Q4_1, Int8BlockLinear for Q8_0."""
    return Int8BlockLinear(blocks, bias) if blocks.kind == "Q8_0" else Int4Linear.from_blocks(blocks, bias)


def stored_blocks(layer: BlockLinear) -> QuantBlocks:
    """The blocks a layer was built from, unpacked again from the bytes it keeps."""
    if layer.raw is None:
        raise ValueError(f"a stacked {layer.kind} layer keeps no blocks of its own")
    return unpack(layer.kind, layer.raw.numpy(), (layer.out_features, layer.in_features))


def block_kinds(model: nn.Module) -> dict[str, str]:
    """The layers of ``model`` that run blocks, by name, with their kind."""
    return {name: m.kind for name, m in model.named_modules() if isinstance(m, BlockLinear)}


def require_float_weights(model: nn.Module, purpose: str) -> None:
    """Refuse ``purpose`` (training, an adapter, an export) on a model whose layers run blocks."""
    kinds = block_kinds(model)
    if kinds:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(Counter(kinds.values()).items()))
        raise BlocksError(
            f"{purpose} needs float weights, and {len(kinds)} layers of this model run a GGUF file's "
            f"quantized blocks ({counts}): import the file with --dtype f32 (or f16, bf16) to dequantize them"
        )
