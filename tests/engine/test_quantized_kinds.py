"""Every kind engine.quantized keeps, read as gguf-py reads it, and run by its kernel within its roundings."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from engine.quantized import FORMATS, KINDS, Int4Linear, Int8BlockLinear, quantized_linear, unpack

ROWS, COLUMNS = 48, 512  # two 256-weight super-blocks a row


def _raw(kind: str, seed: int) -> np.ndarray:
    """Bytes of a [ROWS, COLUMNS] matrix in ``kind``: gguf-py's quantize where it has one, else random
    blocks (every bit pattern is a valid K-quant block) with finite float16 scales."""
    rng = np.random.default_rng(seed)
    qtype = gguf.GGMLQuantizationType[kind]
    w = (rng.standard_normal((ROWS, COLUMNS)) + rng.standard_normal((ROWS, 1))).astype(np.float32)
    try:
        return np.asarray(gguf.quants.quantize(w, qtype))
    except NotImplementedError:  # gguf-py reads the K-quants but does not write them
        pass
    fmt = FORMATS[kind]
    blocks = rng.integers(0, 256, (ROWS * COLUMNS // fmt.block_weights, fmt.block_bytes), dtype=np.uint8)
    halves = (rng.random((len(blocks), 2)) * 0.02).astype(np.float16).view(np.uint8)
    if kind == "Q4_K":  # d and dmin lead the block
        blocks[:, 0:4] = halves
    else:  # Q6_K: d ends it
        blocks[:, -2:] = halves[:, 0:2]
    return blocks.reshape(ROWS, -1)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_dequantizes_to_exactly_gguf_pys_values(kind: str) -> None:
    raw = _raw(kind, 0)
    want = np.asarray(gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[kind]), dtype=np.float32)
    blocks = unpack(kind, raw, (ROWS, COLUMNS))
    assert np.array_equal(blocks.dequantize(), want.reshape(ROWS, COLUMNS))  # -0.0 and 0.0 alike
    assert np.array_equal(blocks.raw, raw.reshape(ROWS, -1))
    fmt = FORMATS[kind]
    assert blocks.scales.shape == blocks.zeros.shape == (ROWS, COLUMNS // fmt.group)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_runs_through_its_kernel_within_the_bfloat16_roundings(kind: str) -> None:
    blocks = unpack(kind, _raw(kind, 1), (ROWS, COLUMNS))
    layer = quantized_linear(blocks)
    assert isinstance(layer, Int4Linear if FORMATS[kind].kernel == "int4" else Int8BlockLinear)
    x = torch.randn(3, COLUMNS, generator=torch.Generator().manual_seed(0))
    w = torch.from_numpy(blocks.dequantize()).double()
    want = x.double() @ w.T
    # input, scales, zeros and output in bfloat16: a few 2^-9 of what the products add up to
    bound = 2.0**-7 * (x.abs().double() @ w.abs().T) + 2.0**-7 * want.abs() + 1e-6
    assert bool(((layer(x).double() - want).abs() <= bound).all())


def test_q4_k_runs_on_the_int4_kernel_with_the_weight_at_code_8_as_its_zero() -> None:
    blocks = unpack("Q4_K", _raw("Q4_K", 2), (ROWS, COLUMNS))
    at_8 = blocks.kernel_zeros()
    assert np.allclose(at_8, blocks.zeros + 8 * blocks.scales)
    dequantized = blocks.dequantize().reshape(ROWS, -1, 32)
    codes = blocks.codes.reshape(ROWS, -1, 32)
    where = codes == 8
    assert np.allclose(dequantized[where], np.broadcast_to(at_8[..., None], codes.shape)[where], atol=1e-6)
