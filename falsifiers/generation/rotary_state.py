"""What one forward call leaves for the next: the model's RoPE tables across lengths, dtypes and moves.

The tables are built on the first call (at least 64 positions), grow when a longer sequence
comes, and are rebuilt after a dtype move.  One model is called with a sequence of lengths and
dtypes that crosses each of those paths; each call's logits must equal, bit for bit, those of a
cold copy of the model that builds its table for that call alone, and the full-precision calls
must agree with transformers' Llama holding the same weights (its own RoPE, no table carried
between calls).
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from engine.generate import generate
from engine.hf_interop import hf_state_dict, to_hf_config
from pv.checkers import checker

# (sequence length, dtype): grows past 64, shorter again, grows twice, a bf16 move, back to fp32.
CALLS: tuple[tuple[int, torch.dtype], ...] = (
    (10, torch.float32), (200, torch.float32), (150, torch.float32), (300, torch.float32),
    (100, torch.bfloat16), (450, torch.float32),
)  # fmt: skip
HF_TOLERANCE = 1e-4  # fp32 logits of two implementations (kernel order), as FALSIFY-EXPORT-005


def _transformers_twin(model: Any) -> Any:
    """transformers' Llama with the engine model's weights, in fp32."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    config = transformers.AutoConfig.for_model(**to_hf_config(model.config))
    twin = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    twin.load_state_dict(hf_state_dict(model), strict=False)
    return twin.eval()


@checker(
    observes=[
        "calls", "warm_differing", "hf_calls", "hf_max_abs_diff", "decode_steps", "decode_differing",
        "decode_max_abs_diff",
    ],
    ids=["FALSIFY-GEN-011"],
)  # fmt: skip
def rope_tables_follow_each_call(tiny_model_factory: Any, seed: int = 0) -> dict[str, Any]:
    """One model called at 10, 200, 150, 300 positions in fp32, 100 in bf16 and 450 in fp32 again,
    each call against a cold copy and (fp32) transformers; then a cached greedy decode from a
    60-token prompt past position 64 against the uncached one."""

    model = tiny_model_factory(seed, std=0.2, max_position_embeddings=512, rope_theta=500.0).eval()
    # The same weights through the same dtype moves (a bf16 round trip rounds them), never called:
    # a copy of it builds its tables for one call only.
    shadow = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    out: dict[str, Any] = {"calls": 0, "warm_differing": 0, "hf_calls": 0, "hf_max_abs_diff": 0.0}
    with torch.no_grad():
        for length, dtype in CALLS:
            ids = torch.randint(3, vocab, (1, length), generator=gen)
            if dtype != next(model.parameters()).dtype:  # a move only where the dtype changes: a
                model.to(dtype)  # move of any kind starts the tables afresh
                shadow.to(dtype)
            warm = model(ids).logits
            cold = copy.deepcopy(shadow)(ids).logits
            out["calls"] += 1
            out["warm_differing"] += not torch.equal(warm, cold)
            if dtype == torch.float32:
                diff = float((warm - _transformers_twin(shadow)(ids).logits).abs().max())
                out["hf_calls"] += 1
                out["hf_max_abs_diff"] = max(out["hf_max_abs_diff"], diff)
    # Cold copies decoding from 60 positions to 84: the cached one grows its table one step at a time.
    prompt = torch.randint(3, vocab, (1, 60), generator=gen)
    steps: dict[str, Any] = {"max_new_tokens": 24, "eos_token_id": [], "return_logits": True}
    cached = generate(copy.deepcopy(shadow), prompt, use_cache=True, **steps)
    plain = generate(copy.deepcopy(shadow), prompt, use_cache=False, **steps)
    out["decode_steps"] = len(cached.new_tokens[0])
    out["decode_differing"] = int(cached.new_tokens != plain.new_tokens)
    assert cached.scores is not None and plain.scores is not None
    out["decode_max_abs_diff"] = float((cached.scores - plain.scores).abs().max())
    return out
