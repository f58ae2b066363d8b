"""The RoPE tables ``engine.model.RotaryEmbedding`` carries between calls: transformers' tables,
rebuilt only when they must be.

transformers' ``LlamaRotaryEmbedding`` computes its inverse frequencies in float32 from an int64
range whatever torch's default dtype, and its cos and sin in float32 before casting them to the
activations' dtype.  The engine keeps a table of cos and sign-folded sin rows and looks rows up;
those rows must be transformers' bit for bit, also for a user who set torch's default dtype to
float64 (a range built in the default dtype would then give float64 frequencies and other values).

The table is built on the first call (at least 64 rows), grows to twice its rows or to the length
asked, whichever is more, and is rebuilt for another dtype; a call it already covers reuses it
(decoding asks for one more position per step, and rebuilding on each would cost several kernels
a step).  For each of 8 settings (default dtype float32 or float64, theta 1e4 or 1e6, head_dim 16
or 64) one table is asked for 10, 200, 150 and 300 positions in float32, 100 and 90 in bf16, then
50 and 400 (exactly the table's rows) in fp16.  After each call the rows asked for are compared
with transformers' cos and sin for those positions, and the table's rows and whether it is the
tensor the call before left are read.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

from engine.model import RotaryEmbedding
from pv.checkers import checker

CALLS: tuple[tuple[int, torch.dtype], ...] = (
    (10, torch.float32), (200, torch.float32), (150, torch.float32), (300, torch.float32),
    (100, torch.bfloat16), (90, torch.bfloat16), (50, torch.float16), (400, torch.float16),
)  # fmt: skip
DEFAULT_DTYPES = (torch.float32, torch.float64)
THETAS = (10_000.0, 1_000_000.0)
HEAD_DIMS = (16, 64)


def _reference(head_dim: int, theta: float, length: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    rope = {"rope_type": "default", "rope_theta": theta}
    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, rope_parameters=rope)
    cos, sin = LlamaRotaryEmbedding(config)(torch.zeros(1, length, head_dim, dtype=dtype), torch.arange(length)[None])
    return cos[0], sin[0]


@checker(observes=["settings", "differing", "rows", "reused"], ids=["FALSIFY-HFI-009"])
def tables_match_transformers() -> dict[str, Any]:
    """Each setting's calls; ``rows`` and ``reused`` list each distinct sequence the settings gave."""

    differing: list[str] = []
    rows: list[list[int]] = []
    reused: list[list[bool]] = []
    settings = list(itertools.product(DEFAULT_DTYPES, THETAS, HEAD_DIMS))
    previous_default = torch.get_default_dtype()
    try:
        for default, theta, head_dim in settings:
            torch.set_default_dtype(default)
            table = RotaryEmbedding(head_dim, theta)
            half = head_dim // 2
            seen_rows: list[int] = []
            seen_reused: list[bool] = []
            before: torch.Tensor | None = None
            for length, dtype in CALLS:
                cos, sin_folded = table(length, dtype, torch.device("cpu"))
                seen_rows.append(cos.shape[0])
                seen_reused.append(before is not None and cos is before)
                before = cos
                sin = torch.cat((-sin_folded[:length, :half], sin_folded[:length, half:]), dim=-1)
                want_cos, want_sin = _reference(head_dim, theta, length, dtype)
                for name, got, want in (("cos", cos[:length], want_cos), ("sin", sin, want_sin)):
                    if got.dtype != want.dtype or not torch.equal(got, want):
                        differing.append(
                            f"default {default}, theta {theta:g}, head_dim {head_dim}, {length} positions in "
                            f"{dtype}: {name} is {got.dtype}, {int((got != want.to(got.dtype)).sum())} values differ"
                        )
            if seen_rows not in rows:
                rows.append(seen_rows)
            if seen_reused not in reused:
                reused.append(seen_reused)
    finally:
        torch.set_default_dtype(previous_default)
    return {"settings": len(settings), "differing": differing, "rows": rows, "reused": reused}
