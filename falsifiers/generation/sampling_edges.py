"""Top-p at exactly p, and the padded batch a generation starts from, against transformers.

Top-p keeps the smallest set of most probable tokens whose probability reaches p.  When the tokens
ranked above one sum to exactly p, that token is outside the set: transformers'
``TopPLogitsWarper`` removes every token whose ascending cumulative probability is at most
``1 - p``.  Probabilities that are exact in binary (uniform over 2, 4 and 8 tokens, and 1/2, 1/4,
1/8, 1/8) put the sums exactly on p; the number of tokens ``filter_logits`` keeps must be the
number the warper keeps (which of tied tokens is kept is the sort's choice in both).

``pad_prompts`` must give what a transformers tokenizer's left padding gives for the same ids:
the ids left-padded with the pad id and an int64 attention mask of ones on the tokens.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tokenizers import Tokenizer

from engine.generate import filter_logits, pad_prompts
from pv.checkers import checker

# (logits, top_p): each puts a cumulative probability exactly on top_p
CASES: tuple[tuple[list[float], float], ...] = (
    ([0.0, 0.0], 0.5),
    ([0.0] * 4, 0.5),
    ([0.0] * 4, 0.75),
    ([0.0] * 8, 0.25),
    ([0.0] * 8, 0.625),
    ([math.log(4.0), math.log(2.0), 0.0, 0.0], 0.5),
    ([math.log(4.0), math.log(2.0), 0.0, 0.0], 0.75),
    ([math.log(4.0), math.log(2.0), 0.0, 0.0], 0.875),
)
PROMPTS = ([5, 6, 7], [9], [3, 4])


@checker(
    observes=["cases", "exact_sums", "kept", "reference_kept", "counts_differing", "padding_differing", "mask_dtype"],
    ids=["FALSIFY-GEN-016"],
)
def top_p_at_exactly_p(engine_tokenizer: Any) -> dict[str, Any]:
    """filter_logits(top_k=None, top_p) on the cases above against TopPLogitsWarper; pad_prompts
    on three prompts against a transformers tokenizer's left padding."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import PreTrainedTokenizerFast
    from transformers.generation.logits_process import TopPLogitsWarper

    kept, reference_kept, exact = [], [], 0
    for logits, top_p in CASES:
        row = torch.tensor([logits], dtype=torch.float32)
        probs = torch.softmax(row, -1).sort(descending=True).values.cumsum(-1)
        exact += bool((probs == top_p).any())  # the case puts a sum exactly on p
        kept.append(int(torch.isfinite(filter_logits(row.clone(), None, top_p)).sum()))
        warped = TopPLogitsWarper(top_p=top_p)(torch.zeros(1, 1, dtype=torch.long), row.clone())
        reference_kept.append(int(torch.isfinite(warped).sum()))
    reference = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(engine_tokenizer.hf_json()), pad_token="<|pad|>"
    )
    reference.padding_side = "left"
    padded = reference.pad({"input_ids": [list(p) for p in PROMPTS]}, return_tensors="pt")
    ids, mask = pad_prompts(PROMPTS, reference.pad_token_id)
    return {
        "cases": len(CASES),
        "exact_sums": exact,
        "kept": kept,
        "reference_kept": reference_kept,
        "counts_differing": sum(a != b for a, b in zip(kept, reference_kept, strict=True)),
        "padding_differing": int(
            not torch.equal(ids, padded["input_ids"]) or not torch.equal(mask, padded["attention_mask"])
        ),
        "mask_dtype": [str(ids.dtype), str(mask.dtype), str(padded["attention_mask"].dtype)],
    }
