"""Greedy decoding written out: the reference the engine's generation is held to."""

from __future__ import annotations

from typing import Any

import torch


def _greedy(model: Any, ids: list[int], steps: int, eos: set[int]) -> list[int]:
    """Greedy decoding written out: the whole sequence through the model at every step (no cache,
    no padding, one prompt at a time), up to and including the first EOS."""
    seq, new = list(ids), []
    with torch.no_grad():
        for _ in range(steps):
            token = int(model(torch.tensor([seq])).logits[0, -1].argmax())
            new.append(token)
            seq.append(token)
            if token in eos:
                break
    return new
