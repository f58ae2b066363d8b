"""The order training batches visit the data: a pure function of ``(seed, step)``, as documented.

``engine.data``: every epoch visits the windows (or instruction rows) in a permutation drawn from
the seed and the epoch number, ``torch.randperm(n, generator=torch.Generator().manual_seed(seed *
1_000_003 + epoch))``, and batch ``step`` takes the next ``batch_size`` of them.  A resume in a
fresh process, or by a later engine version, relies on exactly that: an order drawn from torch's
global generator, or another formula, gives a resumed run other batches than the run it resumes.
Inside one process the engine caches each permutation, which would hide an order drawn from the
global generator, so the batches are read after ``clear_caches()`` with the global generator in
two different states.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.data import InstructionData, TokenData, clear_caches
from pv.checkers import checker

SEEDS = (0, 7)
STEPS = 9  # 3 epochs of 6 windows at 2 a batch


def _documented(seed: int, step: int, batch_size: int, n: int) -> list[int]:
    rows = []
    for i in range(step * batch_size, (step + 1) * batch_size):
        epoch, pos = divmod(i, n)
        gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        rows.append(int(torch.randperm(n, generator=gen)[pos]))
    return rows


@checker(observes=["batches_read", "differing"], ids=["FALSIFY-DATA-012"])
def batches_follow_the_seed() -> dict[str, Any]:
    """TokenData.batch and InstructionData.batch over 3 epochs for seeds 0 and 7, each read twice
    after clear_caches() with torch's global generator seeded 1 and then 2, against the
    documented permutation."""

    n, seq_len, batch_size = 6, 4, 2
    stream = torch.arange(n * seq_len, dtype=torch.int64)  # window w holds w*4 .. w*4+3
    tokens = TokenData(stream, stream[:seq_len], 100, "order")
    rows = torch.arange(n, dtype=torch.int64).repeat_interleave(3).view(n, 3)  # row r is [r, r, r]
    pairs = InstructionData(rows, rows.clone(), rows[:1], rows[:1], "order")
    read = 0
    differing: list[list[Any]] = []
    for seed in SEEDS:
        for global_seed in (1, 2):
            clear_caches()
            torch.manual_seed(global_seed)
            for step in range(STEPS):
                want = _documented(seed, step, batch_size, n)
                got_tokens = [int(w[0]) // seq_len for w in tokens.batch(step, batch_size, seq_len, seed)]
                ids, _ = pairs.batch(step, batch_size, seed)
                got_pairs = [int(r[0]) for r in ids]
                read += 2
                if got_tokens != want or got_pairs != want:
                    differing.append([seed, global_seed, step, want, got_tokens, got_pairs])
    return {"batches_read": read, "differing": differing}
