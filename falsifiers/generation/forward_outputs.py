"""``DecoderLM.forward`` gives what its signature and docstring promise, field by field.

A user calling the model directly (a custom training loop, an evaluation script) reads more than
the logits: ``past_key_values`` is a KV cache only when one was asked for (``use_cache``) or given,
as transformers' models return none with ``use_cache=False``; a cache holds, after each call, the
count of its tokens and the padding mask of a padded batch only, and the logits of calls through it
are the full call's, a left-padded batch sent through it in chunks of several tokens included; the
context window is enforced on the cached and the new tokens together, with a sequence exactly
filling it accepted; ``logits_to_keep`` gives the last positions' logits of the full call;
``labels`` give the mean next-token cross entropy with -100 ignored, and no labels no loss; and
contradictory arguments are refused word for word.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

WINDOW = 16


def _window_refusal(n: int) -> str:
    return f"sequence of {n} tokens exceeds the context window of {WINDOW} (max_position_embeddings)"


@torch.no_grad()
def _padded_chunks(model: Any, ids: torch.Tensor) -> tuple[float, list[str], list[list[int]]]:
    """Row 0 left-padded by 3: 5 tokens, then 2 through the cache with its mask left out, then 2 with
    the whole mask given.  The largest gap at real positions to the full padded call's logits, the
    calls that failed (inf then: what they would have returned is unknown), and the padding mask
    the cache holds at the end ([] when it holds none).

    ``generate`` prefills once and then decodes one token at a time, so only a direct caller sends
    several tokens through the cache of a padded batch.
    """
    mask = torch.ones(ids.shape, dtype=torch.long)
    mask[0, :3] = 0
    full = model(ids, attention_mask=mask).logits
    cache, gaps, failures = None, [], []
    for start, end, given in ((0, 5, mask[:, :5]), (5, 7, None), (7, 9, mask)):
        try:
            step = model(ids[:, start:end], attention_mask=given, past_key_values=cache, use_cache=True)
        except (RuntimeError, ValueError) as exc:  # what a model call raises on shapes it cannot take
            failures.append(f"tokens {start}:{end}: {type(exc).__name__}: {exc}")
            return float("inf"), failures, []
        cache = step.past_key_values
        real = mask[:, start:end].bool()
        gaps.append(float((step.logits - full[:, start:end]).abs().amax(-1)[real].max()))
    held = [] if cache is None or cache.attention_mask is None else cache.attention_mask.tolist()
    return max(gaps), failures, held


@checker(
    observes=[
        "cache_when_not_asked", "cache_lengths", "cached_logits_gap", "cache_key_shapes", "padded_chunk_gap",
        "padded_chunk_failures", "padded_cache_mask", "unpadded_cache_mask_held", "accepted_shapes",
        "kept_logits_gap", "loss_gap", "no_loss_without_labels", "refusals_differing",
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
        for start, end in ((0, 1), (1, 5), (5, 6), (6, 9)):
            step = model(ids[:, start:end], past_key_values=cache, use_cache=True)
            cache = step.past_key_values
            lengths.append(None if cache is None else cache.length)
            gaps.append(float((step.logits - full.logits[:, start:end]).abs().max()))
        out["cache_lengths"] = lengths
        out["cached_logits_gap"] = max(gaps)
        out["cache_key_shapes"] = [] if cache is None else [list(k.shape) for k in cache.keys if k is not None]
        out["padded_chunk_gap"], out["padded_chunk_failures"], out["padded_cache_mask"] = _padded_chunks(
            model, ids[:, :9]
        )
        # An all-ones mask pads nothing: the cache holds no padding mask (KVCache.attention_mask's comment).
        ones = model(ids[:, :5], attention_mask=torch.ones(2, 5, dtype=torch.long), use_cache=True)
        held = ones.past_key_values
        out["unpadded_cache_mask_held"] = held is not None and held.attention_mask is not None
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
        out["no_loss_without_labels"] = [o.loss is None for o in (full, not_asked[2], not_asked[3])]

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
