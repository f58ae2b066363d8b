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

The K-quants and Q5_0 map onto the same two kernels without changing a weight:

* ``Q4_K`` (256-weight super-blocks of eight 32-weight sub-blocks, ``w = d sc_j q - dmin m_j``)
  runs through the int4 kernel with ``scale = d sc_j`` and ``zero = 8 d sc_j - dmin m_j``;
* ``Q5_0`` (``w = d (q - 16)``, q of 5 bits) and ``Q6_K`` (sixteen 16-weight sub-blocks,
  ``w = d sc_j (q - 32)``, q of 6 bits) run through the int8 kernel with the centred codes, one
  call per 32- (Q5_0) or 16-weight (Q6_K) block column.

The blocks are read with numpy from gguf-py's raw tensor bytes (:data:`FORMATS`: each type's block
size and layout, as ggml's ``block_*`` structs): a row of N output weights holds K / 32 blocks of
18 (Q4_0), 20 (Q4_1), 22 (Q5_0) or 34 (Q8_0) bytes, or K / 256 super-blocks of 144 (Q4_K) or 210
(Q6_K) bytes.  A row of a K-quant must hold whole super-blocks: llama.cpp stores a matrix whose rows
do not (Qwen2.5-0.5B's 896-wide ones) in a fallback type, Q5_0 or Q8_0.
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

from engine import native_blocks
from engine.errors import BlocksError
from engine.faults import FAULTS

GROUP = 32  # weights sharing one scale and zero in the int4 kernel, along the input dimension
ACTIVATION_DTYPE = torch.bfloat16  # what both kernels are fast with


@dataclass(frozen=True)
class BlockFormat:
    """One GGUF type's blocks: their size, how many weights share a scale, and the kernel that runs them."""

    block_bytes: int
    block_weights: int  # weights per block along the input (32, or a K-quant's 256)
    group: int  # consecutive weights sharing one scale and zero
    kernel: Literal["int4", "int8"]
    offset: int  # the code whose weight QuantBlocks.zeros holds (0 for the int8 kinds' centred codes)


FORMATS: dict[str, BlockFormat] = {
    "Q4_0": BlockFormat(18, 32, 32, "int4", 8),
    "Q4_1": BlockFormat(20, 32, 32, "int4", 8),
    "Q4_K": BlockFormat(144, 256, 32, "int4", 0),
    "Q5_0": BlockFormat(22, 32, 32, "int8", 0),
    "Q6_K": BlockFormat(210, 256, 16, "int8", 0),
    "Q8_0": BlockFormat(34, 32, 32, "int8", 0),
}
KINDS: tuple[str, ...] = tuple(FORMATS)


@dataclass(frozen=True)
class QuantBlocks:
    """One matrix's blocks as the file holds them, unpacked: codes and per-block scale and zero."""

    kind: str
    raw: np.ndarray  # [N, K / block weights * block bytes] uint8: the blocks as the file stores them
    codes: np.ndarray  # [N, K]: 0..15 for the int4 kinds; centred (Q8_0 -128..127, Q5_0 -16..15, Q6_K -32..31)
    scales: np.ndarray  # [N, K / group] float32 (d, or d sc for a K-quant's sub-block, exactly)
    zeros: np.ndarray  # [N, K / group] float32: the weight at code `offset` (Q4_1 m + 8 d, Q4_K -dmin m); else 0

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.codes.shape[0]), int(self.codes.shape[1])

    @property
    def format(self) -> BlockFormat:
        return FORMATS[self.kind]

    def dequantize(self) -> np.ndarray:
        """The float32 matrix the blocks encode (what gguf-py's dequantize gives, to the bit)."""
        n, k = self.shape
        group, offset = self.format.group, self.format.offset
        codes = self.codes.reshape(n, k // group, group).astype(np.float32) - offset
        return (codes * self.scales[..., None] + self.zeros[..., None]).reshape(n, k).astype(np.float32)

    def kernel_zeros(self) -> np.ndarray:
        """The int4 kernel's zeros: each group's weight at code 8."""
        return self.zeros + np.float32(8 - self.format.offset) * self.scales

    def rows(self, order: np.ndarray) -> QuantBlocks:
        """The same blocks with the output rows in ``order`` (the llama q/k un-permutation)."""
        return QuantBlocks(self.kind, self.raw[order], self.codes[order], self.scales[order], self.zeros[order])


def row_bytes(kind: str, k: int) -> int:
    """Bytes of one row of ``k`` weights in ``kind`` blocks."""
    fmt = FORMATS[kind]
    return k // fmt.block_weights * fmt.block_bytes


def _f16(field: np.ndarray) -> np.ndarray:
    """A two-byte float16 field of every block as float32 ([..., 2] uint8 -> [...])."""
    return field.copy().view(np.float16)[..., 0].astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """Bytes as their low nibbles, then their high nibbles, along the last axis."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


Fields = tuple[np.ndarray, np.ndarray, np.ndarray]  # codes [.., block weights], scales and zeros [.., groups]


def _q4(blocks: np.ndarray, kind: str) -> Fields:
    d = _f16(blocks[..., 0:2])[..., None]
    qs = blocks[..., -16:]
    codes = _nibbles(qs)
    if FAULTS.active("q4_block_halves_swapped"):  # the defect: the high nibbles read as weights 0-15
        codes = np.concatenate([qs >> 4, qs & 0x0F], axis=-1)  # pragma: no mutate
    zeros = np.zeros_like(d)
    if kind == "Q4_1":
        m = _f16(blocks[..., 2:4])[..., None]
        zeros = m + 8 * d
        if FAULTS.active("q4_1_zero_off_by_8"):  # the defect: m taken as the weight at code 8
            zeros = m  # pragma: no mutate
    return codes, d, zeros


def _q8_0(blocks: np.ndarray) -> Fields:
    d = _f16(blocks[..., 0:2])[..., None]
    return blocks[..., 2:].copy().view(np.int8), d, np.zeros_like(d)


def _q5_0(blocks: np.ndarray) -> Fields:
    # d, then 32 fifth bits (a little-endian uint32, bit j for weight j), then 16 bytes of nibbles
    d = _f16(blocks[..., 0:2])[..., None]
    high = blocks[..., 2:6].copy().view("<u4")
    if FAULTS.active("q5_0_high_bits_big_endian"):  # the defect: the bits' bytes reversed
        high = blocks[..., 2:6].copy().view(">u4")  # pragma: no mutate
    fifth = (high >> np.arange(32, dtype=np.uint32)) & 1
    codes = _nibbles(blocks[..., 6:22]).astype(np.int16) | (fifth.astype(np.int16) << 4)
    return codes - 16, d, np.zeros_like(d)


def _q4_k(blocks: np.ndarray) -> Fields:
    # d, dmin, twelve bytes of eight 6-bit scales and mins, then 4 chunks of 32 bytes: each chunk's
    # low nibbles are sub-block 2j, its high nibbles sub-block 2j + 1
    import gguf  # the 6-bit scale unpacking is gguf-py's own; gguf loads only where K-quants are read

    d, dmin = _f16(blocks[..., 0:2])[..., None], _f16(blocks[..., 2:4])[..., None]
    lead = blocks.shape[:-1]
    sc, m = gguf.quants.Q4_K.get_scale_min(blocks[..., 4:16].reshape(-1, 12))
    scales = d * sc.reshape(*lead, 8).astype(np.float32)
    zeros = -(dmin * m.reshape(*lead, 8).astype(np.float32))
    if FAULTS.active("q4_k_min_added"):  # the defect: w = d sc q + dmin m
        zeros = -zeros  # pragma: no mutate
    codes = _nibbles(blocks[..., 16:144].reshape(*lead, 4, 32)).reshape(*lead, 256)
    return codes, scales, zeros


def _q6_k(blocks: np.ndarray) -> Fields:
    # 128 bytes of low nibbles, 64 of 2-bit high parts, sixteen int8 scales, d; each 128-weight half
    # takes 64 bytes of the first (low then high nibbles) and 32 of the second (bits 0-1, 2-3, 4-5, 6-7)
    lead = blocks.shape[:-1]
    halves = []
    for h in range(2):
        low = _nibbles(blocks[..., h * 64 : (h + 1) * 64])
        qh = blocks[..., 128 + h * 32 : 128 + (h + 1) * 32]
        high = np.concatenate([(qh >> s) & 3 for s in (0, 2, 4, 6)], axis=-1)
        halves.append(low.astype(np.int16) | (high.astype(np.int16) << 4))
    codes = np.concatenate(halves, axis=-1) - 32
    d = _f16(blocks[..., 208:210])[..., None]
    scales = d * blocks[..., 192:208].copy().view(np.int8).astype(np.float32)
    if FAULTS.active("q6_k_scales_unsigned"):  # the defect: a scale of -3 read as 253
        scales = d * blocks[..., 192:208].astype(np.float32)  # pragma: no mutate
    return codes, scales, np.zeros((*lead, 16), dtype=np.float32)


def unpack(kind: str, raw: np.ndarray, shape: tuple[int, int]) -> QuantBlocks:
    """The blocks of a ``kind`` tensor of ``shape`` (N rows of K weights) from its raw bytes."""
    fmt = FORMATS.get(kind)
    if fmt is None:
        raise ValueError(f"{kind} blocks are not kept quantized; supported: {', '.join(KINDS)}")
    n, k = shape
    if k % fmt.block_weights:
        raise ValueError(f"a {kind} row of {k} weights is not a whole number of {fmt.block_weights}-weight blocks")
    if np.asarray(raw).size != n * row_bytes(kind, k):
        raise ValueError(f"{np.asarray(raw).size} bytes are not the {kind} blocks of a [{n}, {k}] matrix")
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(n, k // fmt.block_weights, fmt.block_bytes)
    if kind in ("Q4_0", "Q4_1"):
        codes, scales, zeros = _q4(blocks, kind)
    else:
        codes, scales, zeros = {"Q8_0": _q8_0, "Q5_0": _q5_0, "Q4_K": _q4_k, "Q6_K": _q6_k}[kind](blocks)
    return QuantBlocks(
        kind,
        blocks.reshape(n, -1),
        codes.astype(np.int16).reshape(n, k),
        scales.astype(np.float32).reshape(n, -1),
        zeros.astype(np.float32).reshape(n, -1),
    )


Layout = tuple[torch.Tensor, torch.Tensor]  # torch's kernels' form of a layer's blocks (codes, scales)


class BlockLinear(nn.Module, ABC):
    """A linear layer that multiplies through a kernel of quantized blocks; its output in the
    input's dtype, plus its bias.  Q4_0, Q4_1 and Q8_0 blocks run through the native kernel where it
    loads (engine.native_blocks: the blocks where they lie, float32 inputs rounded to int16 per
    block), everything else through torch's int kernels (:meth:`multiply`, bfloat16 activations).

    torch's kernels read the blocks in a layout of their own (:meth:`layout`), built from the
    file's bytes the first time one of them runs the layer: where the native kernel runs every
    layer it is never built, and the model holds its weights once, as the file's blocks."""

    raw: torch.Tensor | None  # the file's blocks (QuantBlocks.raw): what a checkpoint stores
    # a stacked layer's blocks, its parts' rows one after the other (it keeps no raw of its own)
    joined_blocks: torch.Tensor | None = None

    def __init__(
        self, raw: np.ndarray | None, in_features: int, out_features: int, kind: str, bias: torch.Tensor | None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.kind = in_features, out_features, kind
        # the state dict holds the file's bytes; torch's kernels' layout is derived from them
        self.register_buffer("raw", torch.from_numpy(np.array(raw, dtype=np.uint8)) if raw is not None else None)
        self.bias = nn.Parameter(bias.detach().clone(), requires_grad=False) if bias is not None else None
        # torch's layout, by the planted faults active when it was built: the blocks are read
        # under the faults of the run that first needs them, and a faulted layout never serves a
        # clean run (or a run of another fault)
        self._layouts: dict[frozenset[str], Layout] = {}

    @abstractmethod
    def build_layout(self) -> Layout:
        """torch's kernels' layout of the blocks, built now from the file's bytes."""

    @abstractmethod
    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        """``flat`` ([rows, in] bfloat16) times the blocks' matrix transposed, through torch's kernels: [rows, out]."""

    def layout(self) -> Layout:
        """:meth:`build_layout`'s, built once per set of active planted faults."""
        key = frozenset(FAULTS.active_names())
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = self.build_layout()
        return found

    def blocks(self) -> QuantBlocks:
        """The layer's blocks unpacked from the file's bytes it runs (:attr:`kernel_blocks`)."""
        raw = self.kernel_blocks
        if raw is None:
            raise ValueError(f"a stacked {self.kind} layer keeps no blocks of one kind")
        return unpack(self.kind, raw.numpy(), (self.out_features, self.in_features))

    @property
    def kernel_blocks(self) -> torch.Tensor | None:
        """The file's blocks of every output row, in the layer's row order, as the native kernel reads them."""
        return self.raw if self.raw is not None else self.joined_blocks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        native = native_blocks.native_kernel(self.kind)
        blocks = self.kernel_blocks
        if native is not None and blocks is not None and flat.device.type == "cpu":
            code = native_blocks.KINDS[self.kind]
            out = native(flat.float().contiguous(), blocks, code, native_blocks.defects(self.kind))
        else:
            out = self.multiply(flat.to(ACTIVATION_DTYPE))
        out = out.to(x.dtype).view(*x.shape[:-1], self.out_features)
        return out + self.bias.to(x.dtype) if self.bias is not None else out


class Int4Linear(BlockLinear):
    """A linear layer of Q4_0 / Q4_1 / Q4_K blocks; torch's int4 kernel reads them packed, with a
    [K/32, N, 2] bfloat16 scale and zero per group of 32."""

    def __init__(
        self,
        raw: np.ndarray | None,
        in_features: int,
        out_features: int,
        kind: str,
        bias: torch.Tensor | None,
        parts: Sequence[Int4Linear] = (),
    ) -> None:
        super().__init__(raw, in_features, out_features, kind, bias)
        # a stack of blocks of two kinds keeps its parts to build its layout from (not submodules:
        # they are in the model already, and a stack is never saved)
        self.parts = tuple(parts)

    @classmethod
    def from_blocks(cls, blocks: QuantBlocks, bias: torch.Tensor | None = None) -> Int4Linear:
        n, k = blocks.shape
        return cls(blocks.raw, k, n, blocks.kind, bias)

    def build_layout(self) -> Layout:
        if self.kernel_blocks is None:
            # rows of two kinds: their layouts concatenate (see ROW_TILE)
            built = [part.build_layout() for part in self.parts]
            return torch.cat([b[0] for b in built]), torch.cat([b[1] for b in built], dim=1)
        blocks = self.blocks()
        n, k = blocks.shape
        pairs = np.stack([blocks.scales, blocks.kernel_zeros()], axis=-1)  # [N, K/32, 2]
        layout = pairs.transpose(1, 0, 2)  # the kernel's [K/32, N, 2]
        if FAULTS.active("q4_scales_transposed"):  # the defect: scale and zero pairs in the file's row order
            layout = pairs.reshape(k // GROUP, n, 2)  # pragma: no mutate
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(torch.from_numpy(blocks.codes.astype(np.int32)), 1)
        return packed, torch.from_numpy(np.ascontiguousarray(layout)).to(ACTIVATION_DTYPE)

    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        packed, scale_zeros = self.layout()
        return torch.ops.aten._weight_int4pack_mm_for_cpu(flat, packed, GROUP, scale_zeros)


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
    blocks of one kind join byte for byte, torch's layouts of two kinds concatenate (see :data:`ROW_TILE`)."""
    if not can_stack(layers):
        raise ValueError(f"layers of {[m.out_features for m in layers]} rows cannot be stacked")
    biases = [layer.bias for layer in layers]
    rows = [layer.kernel_blocks for layer in layers]
    kinds = {layer.kind for layer in layers}
    joined = None
    if len(kinds) == 1 and all(part is not None for part in rows):  # rows of one kind join byte for byte
        joined = torch.cat([part for part in rows if part is not None])
    bias = None
    if any(b is not None for b in biases):
        parts = [
            b.detach() if b is not None else torch.zeros(layer.out_features)
            for b, layer in zip(biases, layers, strict=True)
        ]
        bias = torch.cat(parts)
    out_features = sum(layer.out_features for layer in layers)
    # decoding's own layer, never saved: no raw of its own
    joint = Int4Linear(None, layers[0].in_features, out_features, "+".join(sorted(kinds)), bias, layers)
    joint.joined_blocks = joined
    return joint


class Int8BlockLinear(BlockLinear):
    """A linear layer of Q8_0, Q5_0 or Q6_K blocks (centred codes, a scale per group of 32 or 16):
    torch's int8 kernel runs one call per group column ([K/group, N, group] int8 codes, [K/group, N]
    bfloat16 scales), summed in float32."""

    def __init__(self, blocks: QuantBlocks, bias: torch.Tensor | None = None) -> None:
        n, k = blocks.shape
        super().__init__(blocks.raw, k, n, blocks.kind, bias)
        self.group = blocks.format.group

    def build_layout(self) -> Layout:
        blocks = self.blocks()
        codes = torch.from_numpy(blocks.codes.astype(np.int8))
        columns = torch.stack(codes.split(self.group, dim=1)).contiguous()  # [K/group, N, group]
        return columns, torch.from_numpy(blocks.scales.T.copy()).to(ACTIVATION_DTYPE)

    def multiply(self, flat: torch.Tensor) -> torch.Tensor:
        codes, scales = self.layout()
        out = torch.zeros(flat.shape[0], self.out_features, dtype=torch.float32, device=flat.device)
        shift = 1 if FAULTS.active("q8_block_scales_shifted") else 0  # the defect: a block boundary moved
        blocks = len(codes)
        for b, part in enumerate(flat.split(self.group, dim=1)):
            out += torch.ops.aten._weight_int8pack_mm(part.contiguous(), codes[b], scales[(b + shift) % blocks]).float()
        return out


def quantized_linear(blocks: QuantBlocks, bias: torch.Tensor | None = None) -> BlockLinear:
    """The layer that runs ``blocks`` as they are: Int4Linear for the int4 kinds, Int8BlockLinear for the rest."""
    if blocks.format.kernel == "int8":
        return Int8BlockLinear(blocks, bias)
    return Int4Linear.from_blocks(blocks, bias)


def stored_blocks(layer: BlockLinear) -> QuantBlocks:
    """The blocks a layer was built from, unpacked again from the bytes it keeps."""
    if layer.raw is None:
        raise ValueError(f"a stacked {layer.kind} layer keeps no blocks of its own")
    return layer.blocks()


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
