"""``engine.generate.filter_logits`` row by row, for any shape and every corner of top-k and top-p.

GEN-006/007 sample from one [batch, vocab] setting each; this claim reads the filter itself over
the settings a user gives (k of 1, a few, all but one, all; p below the best token's probability,
in between, at 1) and the shapes a caller hands it (one row, a batch, a batch of sequences).  The
reference is written out here per row: sort, keep the k best, renormalise, keep the smallest
prefix whose probability reaches p (the token that crosses p included), in plain Python floats.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.generate import filter_logits
from pv.checkers import checker

TOP_K: tuple[int | None, ...] = (None, 1, 3, 31, 32)
TOP_P: tuple[float | None, ...] = (None, 0.02, 0.5, 0.9, 0.999, 1.0)
SHAPES: tuple[tuple[int, ...], ...] = ((32,), (4, 32), (2, 3, 32))


def _kept(row: list[float], top_k: int | None, top_p: float | None) -> set[int]:
    order = sorted(range(len(row)), key=lambda i: -row[i])
    if top_k is not None:
        order = order[:top_k]
    if top_p is None or top_p >= 1.0:
        return set(order)
    peak = max(row[i] for i in order)
    weights = [math.exp(row[i] - peak) for i in order]
    total, cumulative, kept = sum(weights), 0.0, set()
    for i, w in zip(order, weights, strict=True):
        kept.add(i)
        cumulative += w / total
        if cumulative >= top_p:
            break
    return kept


@checker(observes=["rows", "rows_differing", "calls_failed"], ids=["FALSIFY-GEN-013"])
def filter_keeps_the_sets_written_out(seed: int = 0) -> dict[str, Any]:
    """Every (top_k, top_p) pair on random logits of three shapes against the reference sets."""

    gen = torch.Generator().manual_seed(seed)
    out = {"rows": 0, "rows_differing": 0, "calls_failed": 0}
    for shape in SHAPES:
        logits = torch.randn(shape, generator=gen) * 3
        for top_k in TOP_K:
            for top_p in TOP_P:
                try:
                    filtered = filter_logits(logits.clone(), top_k, top_p)
                except Exception:  # a filter that cannot take this shape fails every row of it
                    out["calls_failed"] += 1
                    continue
                for row, got in zip(logits.reshape(-1, shape[-1]), filtered.reshape(-1, shape[-1]), strict=True):
                    kept = {int(i) for i in torch.nonzero(torch.isfinite(got)).flatten()}
                    unchanged = all(float(got[i]) == float(row[i]) for i in kept)
                    out["rows"] += 1
                    out["rows_differing"] += kept != _kept(row.tolist(), top_k, top_p) or not unchanged
    return out
