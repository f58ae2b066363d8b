"""Generation: EOS and max_new_tokens stops, a transparent KV cache, deterministic greedy decoding.

The models are the tiny preset with weights drawn at a wider spread than the engine's init
(:data:`WEIGHT_STD`): with std 0.02 every logit is near zero, attention is almost uniform and a
misplaced rotary position barely moves the output, so a cache defect could hide under the
tolerance.  Prompts differ in length, so every batch is left-padded.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.errors import GenerationError
from engine.generate import choose_next, generate, pad_prompts
from engine.tokenizer import EngineTokenizer
from pv.checkers import checker

WEIGHT_STD = 0.2
PROMPTS = (
    "def add(a, b):\n    return a + b\n",
    "import sys\n",
    "class Point:\n    def __init__(self, x, y):",
    "for i in range(10):",
)
NO_EOS: list[int] = []


def _batch(tokenizer: EngineTokenizer, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    prompts = [tokenizer.encode(PROMPTS[i % len(PROMPTS)], add_bos=True) for i in range(batch)]
    return pad_prompts(prompts, tokenizer.pad_id)


@checker(observes=["eos_id", "eos_found", "tokens_after_eos", "first_eos_step"], ids=["FALSIFY-GEN-001"])
def eos_stops(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, eos_step: int, seed: int = 0
) -> dict[str, Any]:
    """Make the token greedy decoding emits at step ``eos_step`` (1-based) the EOS id and decode again.

    ``tokens_after_eos`` counts tokens a row produced after its first EOS: in ``new_tokens`` and in
    the sequence columns, where a stopped row must hold only padding.
    """
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, 1)
    free = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=NO_EOS)
    eos_id = free.new_tokens[0][eos_step - 1]
    pad = engine_tokenizer.pad_id
    out = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=eos_id, pad_token_id=pad)
    row = out.new_tokens[0]
    if eos_id not in row:
        return {"eos_id": eos_id, "eos_found": 0, "tokens_after_eos": 0, "first_eos_step": -1}
    first = row.index(eos_id)
    columns = out.sequences[0, out.prompt_width + first + 1 :].tolist()
    after = max(len(row) - first - 1, sum(1 for t in columns if t != pad))
    return {"eos_id": eos_id, "eos_found": 1, "tokens_after_eos": after, "first_eos_step": first + 1}


@checker(observes=["min_generated", "max_generated", "columns_generated"], ids=["FALSIFY-GEN-002"])
def max_new_tokens(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, batch: int, seed: int = 0
) -> dict[str, Any]:
    """New tokens per row of a left-padded batch decoded with no EOS id."""
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, batch)
    out = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=NO_EOS)
    counts = [len(t) for t in out.new_tokens]
    return {
        "min_generated": min(counts),
        "max_generated": max(counts),
        "columns_generated": int(out.sequences.shape[1] - input_ids.shape[1]),
    }


@checker(observes=["max_abs_logit_diff", "steps_compared", "logit_scale"], ids=["FALSIFY-GEN-003"])
def cache_equivalence(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, steps: int, batch: int, seed: int = 0
) -> dict[str, Any]:
    """Each step's cached logits against one uncached forward over the finished sequences.

    The step-t logits of a cached decode must equal the full forward's logits at the position
    before token t; both see the same left-padded tokens and attention mask.
    """
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, batch)
    out = generate(model, input_ids, mask, max_new_tokens=steps, eos_token_id=NO_EOS, return_logits=True)
    assert out.scores is not None
    width = input_ids.shape[1]
    n = out.scores.shape[1]
    full_mask = torch.cat([mask, torch.ones(mask.shape[0], out.sequences.shape[1] - width, dtype=mask.dtype)], 1)
    with torch.inference_mode():
        full = model(out.sequences, attention_mask=full_mask).logits.float()
    reference = full[:, width - 1 : width - 1 + n]
    return {
        "max_abs_logit_diff": float((out.scores - reference).abs().max()),
        "steps_compared": n,
        "logit_scale": float(reference.abs().mean()),
    }


@checker(observes=["mismatched_tokens", "tokens_compared"], ids=["FALSIFY-GEN-004"])
def greedy_deterministic(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, runs: int, seed: int = 0
) -> dict[str, Any]:
    """Decode the same prompts greedily ``runs`` times; count tokens that differ from the first run."""
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, len(PROMPTS))
    outputs = [
        generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=NO_EOS).sequences
        for _ in range(runs)
    ]
    first = outputs[0]
    mismatched = 0
    for other in outputs[1:]:
        if other.shape != first.shape:
            mismatched += max(first.numel(), other.numel())
        else:
            mismatched += int((other != first).sum())
    return {"mismatched_tokens": mismatched, "tokens_compared": first.numel() * (runs - 1)}


@checker(
    observes=["mismatched_tokens", "tokens_compared", "global_rng_changed", "seeds_differ"],
    ids=["FALSIFY-GEN-005"],
)
def seeded_sampling(
    engine_tokenizer: EngineTokenizer,
    tiny_model_factory: Any,
    max_new_tokens: int,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int = 0,
) -> dict[str, Any]:
    """Sample twice with the same ``seed``, moving the global RNG in between; once with ``seed + 1``.

    ``mismatched_tokens`` counts tokens where the two same-seed runs differ, ``global_rng_changed``
    whether a sampled call left torch's global generator in a different state, and ``seeds_differ``
    whether another seed changes the sample at all (else the comparison could not fail).
    """
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, len(PROMPTS))

    def sample(call_seed: int) -> torch.Tensor:
        return generate(
            model,
            input_ids,
            mask,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=call_seed,
            eos_token_id=NO_EOS,
        ).sequences

    state = torch.get_rng_state()
    first = sample(seed)
    changed = not torch.equal(state, torch.get_rng_state())
    torch.manual_seed(seed + 12345)  # a caller that uses the global RNG between two calls
    second = sample(seed)
    other = sample(seed + 1)
    mismatched = int((first != second).sum()) if first.shape == second.shape else max(first.numel(), second.numel())
    differ = first.shape != other.shape or bool((first != other).any())
    return {
        "mismatched_tokens": mismatched,
        "tokens_compared": first.numel(),
        "global_rng_changed": int(changed),
        "seeds_differ": int(differ),
    }


def reference_distribution(
    logits: list[float], temperature: float, top_k: int | None, top_p: float | None
) -> list[float]:
    """The sampling distribution computed independently of the engine, in plain Python, by the
    documented rule (as in transformers' logits warpers): softmax(logits / T), then keep the k
    most probable, then the smallest most-probable prefix whose mass reaches top_p, renormalised."""
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    weights = [math.exp(x - top) for x in scaled]
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    keep = set(order[:top_k] if top_k is not None else order)
    if top_p is not None and top_p < 1.0:
        kept = [i for i in order if i in keep]
        total = sum(weights[i] for i in kept)
        nucleus: set[int] = set()
        mass = 0.0
        for i in kept:
            if mass >= top_p:
                break
            nucleus.add(i)
            mass += weights[i] / total
        keep = nucleus
    z = sum(weights[i] for i in keep)
    return [weights[i] / z if i in keep else 0.0 for i in range(len(weights))]


@checker(
    observes=["tv_distance", "outside_support", "support_sampled", "support_expected", "samples"],
    ids=["FALSIFY-GEN-006", "FALSIFY-GEN-007"],
)
def sampling_distribution(
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    vocab: int = 32,
    samples: int = 200_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Draw ``samples`` tokens with the engine's sampler from one fixed logit vector and compare the
    frequencies with :func:`reference_distribution` (total variation distance, support)."""

    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(vocab, generator=gen) * 2.0
    expected = reference_distribution(logits.tolist(), temperature, top_k, top_p)
    drawn = choose_next(logits.expand(samples, vocab).contiguous(), temperature, top_k, top_p, gen)
    counts = torch.bincount(drawn, minlength=vocab).tolist()
    freq = [c / samples for c in counts]
    return {
        "tv_distance": 0.5 * sum(abs(f - e) for f, e in zip(freq, expected, strict=True)),
        "outside_support": sum(c for c, e in zip(counts, expected, strict=True) if e == 0.0),
        "support_sampled": sum(1 for c in counts if c),
        "support_expected": sum(1 for e in expected if e > 0),
        "samples": samples,
    }


@checker(
    observes=["rows_mismatched", "rows", "distinct_lengths", "rows_finished", "all_finished_early"],
    ids=["FALSIFY-GEN-008"],
)
def eos_per_row(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, seed: int = 0
) -> dict[str, Any]:
    """Each row of a batch stops at its own first EOS and no sooner: greedy decoding with an EOS
    chosen so that the rows finish at different steps must give every row exactly its EOS-free
    continuation cut after that token."""
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, len(PROMPTS))
    free = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=NO_EOS).new_tokens

    def cut(tokens: list[int], eos: int) -> list[int]:
        return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens

    # an EOS the first row meets early and at least one other row meets later or never
    early = free[0][1 : max_new_tokens // 2]
    eos = next((t for t in early if len({len(cut(row, t)) for row in free}) >= 2), free[0][1])
    out = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=eos)
    expected = [cut(row, eos) for row in free]
    # every row's third token an EOS: all rows finish by step 3, and decoding stops there, so the
    # sequences hold the prompts and as many columns as the longest row took
    ends = sorted({row[2] for row in free})
    early_out = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=ends)
    first_end = [row[: next(i for i, t in enumerate(row) if t in ends) + 1] for row in free]
    return {
        "rows_mismatched": sum(1 for got, want in zip(out.new_tokens, expected, strict=True) if got != want),
        "rows": len(expected),
        "distinct_lengths": len({len(row) for row in expected}),
        "rows_finished": sum(out.finished),
        "all_finished_early": [
            early_out.new_tokens == first_end,
            early_out.finished == [True] * len(free),
            early_out.sequences.shape[1] - input_ids.shape[1] == max(len(row) for row in first_end),
        ],
    }


@checker(observes=["rows_mismatched", "rows", "padded_rows"], ids=["FALSIFY-GEN-009"])
def batch_matches_alone(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, seed: int = 0
) -> dict[str, Any]:
    """Padding changes nothing: each row of a left-padded greedy batch gets exactly the tokens its
    prompt gets decoded alone, with no attention mask (the call most users make)."""
    model = tiny_model_factory(seed, std=WEIGHT_STD)
    input_ids, mask = _batch(engine_tokenizer, len(PROMPTS))
    batch = generate(model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=NO_EOS).new_tokens
    alone = [
        generate(
            model,
            torch.tensor(engine_tokenizer.encode(prompt, add_bos=True)),
            max_new_tokens=max_new_tokens,
            eos_token_id=NO_EOS,
        ).new_tokens[0]
        for prompt in PROMPTS
    ]
    return {
        "rows_mismatched": sum(1 for got, want in zip(batch, alone, strict=True) if got != want),
        "rows": len(alone),
        "padded_rows": int((mask == 0).any(dim=1).sum()),
    }


def _requests(model: Any, width: int) -> tuple[list[tuple[str, str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """(refused, accepted): each malformed request with the word its refusal must name, and the
    requests on the boundary of each rule, which must decode."""
    vocab, ctx = model.config.vocab_size, model.config.max_position_embeddings
    ids = torch.randint(3, vocab, (2, width), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    half_padded = mask.clone()
    half_padded[1, :-1] = 0

    def call(**changes: Any) -> dict[str, Any]:
        return {"input_ids": ids, "attention_mask": mask, "max_new_tokens": 2, **changes}

    def with_token(token: int) -> torch.Tensor:
        changed = ids.clone()
        changed[0, -1] = token
        return changed

    refused = [
        ("1-D input_ids", "input_ids", call(input_ids=ids[0], attention_mask=mask[0])),
        ("float input_ids", "input_ids", call(input_ids=ids.float())),
        ("an empty prompt", "prompt", call(input_ids=ids[:, :0], attention_mask=mask[:, :0])),
        ("a mask of another shape", "attention_mask", call(attention_mask=mask[:, 1:])),
        ("a row with no real token", "attention_mask", call(attention_mask=mask * torch.tensor([[1], [0]]))),
        ("max_new_tokens -1", "max_new_tokens", call(max_new_tokens=-1)),
        ("max_new_tokens 2.0", "max_new_tokens", call(max_new_tokens=2.0)),
        ("temperature -0.1", "temperature", call(temperature=-0.1)),
        ("top_k 0", "top_k", call(temperature=1.0, top_k=0)),
        ("top_p 0", "top_p", call(temperature=1.0, top_p=0.0)),
        ("top_p 1.01", "top_p", call(temperature=1.0, top_p=1.01)),
        ("a token id of vocab_size", "input_ids", call(input_ids=with_token(vocab))),
        ("a token id of -1", "input_ids", call(input_ids=with_token(-1))),
        (
            "a prompt longer than the context",
            "context window",
            call(input_ids=torch.full((1, ctx + 1), 3), attention_mask=torch.ones(1, ctx + 1, dtype=torch.long)),
        ),
        ("prompt + max_new_tokens one past the context", "context window", call(max_new_tokens=ctx - width + 1)),
    ]
    accepted = [
        ("max_new_tokens 0", call(max_new_tokens=0)),
        ("temperature 0 (greedy)", call(temperature=0.0)),
        ("top_k 1", call(temperature=1.0, top_k=1, seed=0)),
        ("top_p 1.0", call(temperature=1.0, top_p=1.0, seed=0)),
        ("prompt + max_new_tokens exactly the context", call(max_new_tokens=ctx - width)),
        ("token ids 0 and vocab_size - 1", call(input_ids=with_token(vocab - 1).index_fill(1, torch.tensor([0]), 0))),
        ("int32 input_ids", call(input_ids=ids.to(torch.int32))),
        ("a row with one real token", call(attention_mask=half_padded)),
    ]
    return refused, accepted


@checker(
    observes=["refused_cases", "refused", "refusals_naming_the_argument", "accepted_cases", "accepted"],
    ids=["FALSIFY-GEN-010"],
)
def malformed_requests_refused(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, prompt_len: int = 8, seed: int = 0
) -> dict[str, Any]:
    """Each malformed request must raise ``GenerationError`` naming the argument at fault (and
    nothing else may escape); each request on the boundary of a rule must decode.  Also the two
    refusals of ``pad_prompts`` (no prompts, an empty prompt), word for word."""

    model = tiny_model_factory(seed)
    refused_cases, accepted_cases = _requests(model, prompt_len)
    refused = named = 0
    for _, word, request in refused_cases:
        try:
            generate(model, eos_token_id=NO_EOS, **request)
        except GenerationError as exc:
            refused += 1
            named += word in str(exc)
        except Exception:  # refused, but not as a GenerationError a caller can catch: not counted
            pass
    # pad_prompts' refusals are read word for word
    for prompts, message in (
        ([], "no prompts given"),
        ([[5, 6], []], "a prompt is empty; start it with the BOS token at least"),
    ):
        try:
            pad_prompts(prompts, engine_tokenizer.pad_id)
        except GenerationError as exc:
            refused += 1
            named += str(exc) == message
    accepted = 0
    for _, request in accepted_cases:
        try:
            out = generate(model, eos_token_id=NO_EOS, **request)
        except Exception:
            continue
        accepted += all(len(row) == request["max_new_tokens"] for row in out.new_tokens)
    return {
        "refused_cases": len(refused_cases) + 2,
        "refused": refused,
        "refusals_naming_the_argument": named,
        "accepted_cases": len(accepted_cases),
        "accepted": accepted,
    }
