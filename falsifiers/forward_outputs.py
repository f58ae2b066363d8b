"""``DecoderLM.forward`` gives what its signature and docstring promise, field by field.

A user calling the model directly (a custom training loop, an evaluation script) reads more than
the logits: ``past_key_values`` is a KV cache only when one was asked for (``use_cache``) or
given, as transformers' models return none with ``use_cache=False``; a cache counts the tokens it
holds after each call, and the logits of calls through it are the full call's; the context
window is enforced on the cached and the new tokens together, with a sequence exactly filling it
accepted; ``logits_to_keep`` gives the last positions' logits of the full call; ``labels`` give
the mean next-token cross entropy with -100 ignored; and contradictory arguments are refused
word for word.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from falsifiers.refusals import refusals_differing
from pv.checkers import checker

WINDOW = 16


def _window_refusal(n: int) -> str:
    return f"sequence of {n} tokens exceeds the context window of {WINDOW} (max_position_embeddings)"


@checker(
    observes=[
        "cache_when_not_asked", "cache_lengths", "cached_logits_gap", "cache_key_shapes", "accepted_shapes",
        "kept_logits_gap", "loss_gap", "refusals_differing",
    ],
    ids=["FALSIFY-GEN-019"],
)  # fmt: skip
def forward_as_documented(tiny_model_factory: Any, seed: int) -> dict[str, Any]:
    """A tiny model with a 16-token window, called as a user calls it."""
    model = tiny_model_factory(seed, std=0.3, max_position_embeddings=WINDOW)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (2, WINDOW + 1), generator=torch.Generator().manual_seed(seed))
    labels = ids[:, :9].clone()
    labels[0, 3] = labels[1, 7] = -100
    out: dict[str, Any] = {}
    with torch.no_grad():
        full = model(ids[:, :9])
        not_asked = [
            full,
            model(ids[:, :9], labels=labels),
            model(ids[:, :9], attention_mask=torch.ones(2, 9, dtype=torch.long)),
            model(ids[:, :9], logits_to_keep=3),
        ]
        out["cache_when_not_asked"] = [o.past_key_values is None for o in not_asked]
        lengths, cache, gaps = [], None, []
        for start, end in ((0, 5), (5, 6), (6, 9)):
            step = model(ids[:, start:end], past_key_values=cache, use_cache=True)
            cache = step.past_key_values
            lengths.append(None if cache is None else cache.length)
            gaps.append(float((step.logits - full.logits[:, start:end]).abs().max()))
        out["cache_lengths"] = lengths
        out["cached_logits_gap"] = max(gaps)
        out["cache_key_shapes"] = [] if cache is None else [list(k.shape) for k in cache.keys if k is not None]
        accepted = [model(ids[:, :WINDOW]).logits]
        cached = model(ids[:, : WINDOW - 1], use_cache=True).past_key_values
        accepted.append(model(ids[:, WINDOW - 1 : WINDOW], past_key_values=cached).logits)
        out["accepted_shapes"] = [list(a.shape) for a in accepted]
        out["kept_logits_gap"] = float((not_asked[3].logits - full.logits[:, -3:]).abs().max())
        loss = not_asked[1].loss
        want = F.cross_entropy(
            full.logits[:, :-1].reshape(-1, vocab).float(), labels[:, 1:].reshape(-1), ignore_index=-100
        )
        out["loss_gap"] = float("inf") if loss is None else abs(float(loss) - float(want))

        def over_cached() -> None:
            filled = model(ids[:, : WINDOW - 2], use_cache=True).past_key_values
            model(ids[:, WINDOW - 2 : WINDOW + 1], past_key_values=filled)

        out["refusals_differing"] = refusals_differing(
            [
                (partial(model, ids), ValueError, _window_refusal(WINDOW + 1)),
                (over_cached, ValueError, _window_refusal(WINDOW + 1)),
                (
                    partial(model, ids[:, :9], labels=labels, logits_to_keep=1),
                    ValueError,
                    "logits_to_keep and labels together: the loss needs every position's logits",
                ),
                (
                    partial(model, ids[:, :9], attention_mask=torch.ones(2, 8, dtype=torch.long)),
                    ValueError,
                    "attention_mask has shape [2, 8]; expected [2, 9] (the 0 cached tokens plus the 9 new ones)",
                ),
            ]
        )
    return out
