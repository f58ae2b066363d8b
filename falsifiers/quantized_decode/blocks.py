"""Blocks as gguf-py writes and reads them, and the layers that run them (``engine.quantized``).

The reference for every block is gguf-py: its ``quantize`` writes the raw bytes of seeded random
matrices in each kind, its ``dequantize`` gives the float32 values those bytes encode.  A layer's
output is compared with ``x @ W.T`` in float64 over that dequantized W, against a bound worked out
here from what the kernels round to bfloat16 (8 significant bits: a relative error of at most
2^-9 per rounding): the input, each block's scale and zero (so each weight moves by at most 2^-9
of ``|q - 8| |scale| + |zero|``), and the output (per block column for Q8_0).  Twice that, plus
2^-9 of the output, bounds every element; float32 accumulation adds far less.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from engine.native_blocks import forced
from engine.quantized import Int4Linear, QuantBlocks, quantized_linear, unpack
from pv.checkers import checker

KINDS = ("Q4_0", "Q4_1", "Q8_0")
SHAPES = ((64, 128), (192, 576))  # (rows N, inputs K): the second is SmolLM2's k_proj
# Q5_0 and the K-quants of a Q4_K_M file (Qwen2.5-Coder-0.5B's: Q5_0 for its 896-wide rows, Q4_K
# and Q6_K for the 4,864-wide ffn_down); a K-quant row holds whole 256-weight super-blocks
MIXED_KINDS = ("Q5_0", "Q4_K", "Q6_K")
MIXED_SHAPES = ((64, 256), (96, 1024))


def quantized_matrix(kind: str, shape: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw bytes of a seeded N(0, 1) matrix (a row offset so Q4_1's m is not zero) and gguf-py's
    dequantization of them.  gguf-py writes no K-quant: those are seeded random blocks (every bit
    pattern is a valid block) with float16 d (and Q4_K's dmin) drawn from [0, 0.02)."""
    # gguf is the reference: it loads only in the checkers that compare with it
    import gguf

    rng = np.random.default_rng(seed)
    qtype = gguf.GGMLQuantizationType[kind]
    if kind.endswith("_K"):
        block_weights, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, (shape[0] * shape[1] // block_weights, block_bytes), dtype=np.uint8)
        scales = (rng.random((len(raw), 2)) * 0.02).astype(np.float16).view(np.uint8)
        if kind == "Q4_K":  # d and dmin lead the block
            raw[:, 0:4] = scales
        else:  # Q6_K: d ends it
            raw[:, -2:] = scales[:, 0:2]
        raw = raw.reshape(shape[0], -1)
    else:
        w = (rng.standard_normal(shape) + rng.standard_normal((shape[0], 1))).astype(np.float32)
        raw = gguf.quants.quantize(w, qtype)
    return raw, np.asarray(gguf.quants.dequantize(raw, qtype), dtype=np.float32).reshape(shape)


@checker(observes=["matrices", "values_differing", "kinds"], ids=["FALSIFY-QDEC-001"])
def blocks_read_as_gguf_py_reads_them(seed: int = 0) -> dict[str, Any]:
    """Q4_0, Q4_1 and Q8_0 bytes of two matrices each, unpacked and dequantized, against gguf-py."""
    out: dict[str, Any] = {"matrices": 0, "values_differing": 0, "kinds": []}
    for kind in KINDS:
        for n, shape in enumerate(SHAPES):
            raw, want = quantized_matrix(kind, shape, seed + n)
            blocks = unpack(kind, raw, shape)
            out["matrices"] += 1
            out["values_differing"] += int(np.count_nonzero(blocks.dequantize() != want))
            out["kinds"].append(blocks.kind)
    return out


def _bound(x: torch.Tensor, w: np.ndarray, blocks: QuantBlocks) -> torch.Tensor:
    n, k = blocks.shape
    group = blocks.format.group
    # the int4 kernel's zero is the weight at code 8; the int8 kinds' codes are centred, their zero 0
    offset, zeros = (8, blocks.kernel_zeros()) if blocks.format.kernel == "int4" else (0, blocks.zeros)
    codes = np.abs(blocks.codes.reshape(n, k // group, group).astype(np.float64) - offset)
    moved = (codes * np.abs(blocks.scales[..., None]) + np.abs(zeros[..., None])).reshape(n, k)
    ax = x.abs().double()
    spread = ax @ torch.from_numpy(np.abs(w).astype(np.float64) + moved).T
    exact = x.double() @ torch.from_numpy(w.astype(np.float64)).T
    return 2.0**-8 * spread + 2.0**-9 * exact.abs() + 1e-6


Bound = Callable[[torch.Tensor, np.ndarray, QuantBlocks], torch.Tensor]  # (x, W, its blocks) -> per output


def layer_errors(
    out: dict[str, Any],
    kinds: tuple[str, ...],
    shapes: tuple[tuple[int, int], ...],
    seed: int,
    row_counts: tuple[int, ...],
    bound: Bound = _bound,
) -> None:
    """Each kind's layer on each shape (the first with a bias), a seeded input of each of
    ``row_counts`` rows: the output against float64 ``x @ W.T`` within ``bound`` (by default the
    bound of torch's kernels' bfloat16 roundings), counted per layer and input."""
    gen = torch.Generator().manual_seed(seed)
    for kind in kinds:
        for n, shape in enumerate(shapes):
            raw, w = quantized_matrix(kind, shape, seed + n)
            blocks = unpack(kind, raw, shape)
            bias = torch.randn(shape[0], generator=gen) if n == 0 else None
            layer = quantized_linear(blocks, bias)
            for rows in row_counts:
                x = torch.randn(rows, shape[1], generator=gen) * 3
                got = layer(x).double()
                want = x.double() @ torch.from_numpy(w.astype(np.float64)).T
                if bias is not None:
                    want = want + bias.double()
                err, limit = (got - want).abs(), bound(x, w, blocks)
                out["layers"] += 1
                out["elements"] += err.numel()
                out["over_bound"] += int((err > limit).sum())
                out["worst_share_of_bound"] = max(out["worst_share_of_bound"], float((err / limit).max()))


@checker(observes=["layers", "elements", "over_bound", "worst_share_of_bound"], ids=["FALSIFY-QDEC-002"])
def layers_within_their_rounding(seed: int = 0, rows: int = 5) -> dict[str, Any]:
    """Each kind's layer on two shapes, 5 seeded input rows (one with a bias): the output against
    float64 ``x @ W.T`` within the bound worked out from torch's kernels' bfloat16 roundings (the
    native kernel, where it loads, is FALSIFY-QDEC-006's)."""
    out: dict[str, Any] = {"layers": 0, "elements": 0, "over_bound": 0, "worst_share_of_bound": 0.0}
    with forced("torch"):
        layer_errors(out, KINDS, SHAPES, seed, (rows,))
    return out


@checker(
    observes=[
        "matrices",
        "values_differing",
        "layers",
        "elements",
        "over_bound",
        "worst_share_of_bound",
        "int4_kinds",
        "int8_kinds",
    ],
    ids=["FALSIFY-QDEC-005"],
)
def mixed_kinds_read_and_run(seed: int = 0, rows: int = 5) -> dict[str, Any]:
    """Q5_0, Q4_K and Q6_K: each matrix's blocks dequantized against gguf-py's, and each as a layer
    within its bfloat16 roundings (FALSIFY-QDEC-001 and -002 for the types of a Q4_K_M file)."""
    out: dict[str, Any] = {"matrices": 0, "values_differing": 0, "int4_kinds": [], "int8_kinds": []}
    for kind in MIXED_KINDS:
        for n, shape in enumerate(MIXED_SHAPES):
            raw, want = quantized_matrix(kind, shape, seed + n)
            blocks = unpack(kind, raw, shape)
            out["matrices"] += 1
            out["values_differing"] += int(np.count_nonzero(blocks.dequantize() != want))
            kernel = "int4" if isinstance(quantized_linear(blocks), Int4Linear) else "int8"
            if kind not in out[f"{kernel}_kinds"]:
                out[f"{kernel}_kinds"].append(kind)
    out.update({"layers": 0, "elements": 0, "over_bound": 0, "worst_share_of_bound": 0.0})
    layer_errors(out, MIXED_KINDS, MIXED_SHAPES, seed, (rows,))
    return out
