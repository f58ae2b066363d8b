"""``engine.generate.generate``'s documented defaults, and its refusals word for word.

Its docstring promises: ``eos_token_id`` defaults to the model config's (a config without one
decodes every token asked for); ``pad_token_id``, what fills a row's columns after its EOS while
other rows go on, defaults to the config's pad, else the first EOS id; logits come back only when
asked for.  Greedy decoding is written out here (no cache) to find, for two prompts, an id the
first row produces second and the second row never does: with it as EOS the first row stops
after two tokens and the second runs on.  The refusals a caller reads are compared with their
documented wording, including the context-window bound at both sides of its edge.  Sampling
settings must reach the draw (top-k 1 and a vanishing top-p give the greedy token whatever the
seed), and decoding without the KV cache must mask a left-padded row's padding as with it.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.generate import GenerationError, generate
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

CONTEXT = 16
STEPS = 6
PAD = 509  # a pad id no greedy token here is: the columns after EOS show where it came from


def _rows(model: Any) -> tuple[list[list[int]], int, list[list[int]]]:
    """Two prompts, an EOS the first row gives second and the second never, and their greedy tokens."""

    for start in range(3, 200, 3):
        prompts = [[start, start + 1, start + 2], [start + 100, start + 101, start + 102]]
        first, second = (_greedy(model, p, STEPS, set()) for p in prompts)
        eos = first[1]
        if eos != first[0] and eos not in second and PAD not in first + second:
            return prompts, eos, [first, second]
    raise AssertionError("no pair of prompts parts as needed")


@checker(observes=["cases", "differing"], ids=["FALSIFY-GEN-017"])
def generate_defaults_and_refusals(tiny_model_factory: Any) -> dict[str, Any]:
    """Pad and EOS defaults from the config, logits only when asked, and six refusals."""

    base = tiny_model_factory(0, std=0.2, max_position_embeddings=CONTEXT, eos_token_id=None, pad_token_id=None)
    prompts, eos, tokens = _rows(base)
    ids = torch.tensor(prompts)
    width = ids.shape[1]
    differing: list[str] = []
    cases = 0

    def check(label: str, got: Any, want: Any) -> None:
        nonlocal cases
        cases += 1
        if got != want:
            differing.append(f"{label}: {got!r} != {want!r}")

    def tail(out: Any) -> list[int]:
        """What fills the first row after its EOS (two tokens in) while the second row runs on."""
        return sorted(set(out.sequences[0, width + 2 :].tolist()))

    def run(model: Any, **kwargs: Any) -> Any:
        try:
            return generate(model, ids, max_new_tokens=STEPS, **kwargs)
        except Exception as exc:  # a crash where tokens were due is a difference
            return f"{type(exc).__name__}: {exc}"

    padded = tiny_model_factory(0, std=0.2, max_position_embeddings=CONTEXT, eos_token_id=None, pad_token_id=PAD)
    out = run(padded, eos_token_id=eos)
    check("the config's pad fills after EOS", tail(out) if not isinstance(out, str) else out, [PAD])
    check("no logits unless asked", out.scores is None if not isinstance(out, str) else out, True)
    out = run(base, eos_token_id=[eos, eos + 1])
    check("without a config pad, the first EOS fills", tail(out) if not isinstance(out, str) else out, [eos])
    ending = tiny_model_factory(0, std=0.2, max_position_embeddings=CONTEXT, eos_token_id=eos, pad_token_id=None)
    out = run(ending)
    want = [[tokens[0][:2], tokens[1]], [True, False]]
    check("the config's EOS by default", [out.new_tokens, out.finished] if not isinstance(out, str) else out, want)
    out = run(base)
    want = [tokens, [False, False]]
    check(
        "no EOS anywhere: every token asked for",
        [out.new_tokens, out.finished] if not isinstance(out, str) else out,
        want,
    )

    refusals = (
        ("empty prompt", lambda: generate(base, torch.zeros((1, 0), dtype=torch.long), max_new_tokens=1),
         "the prompt is empty"),
        ("a row without a real token", lambda: generate(base, ids, torch.tensor([[1, 1, 1], [0, 0, 0]]),
                                                        max_new_tokens=1),
         "a row of attention_mask has no real token"),
        ("float ids", lambda: generate(base, torch.ones((1, 3)), max_new_tokens=1),
         "input_ids must be a 2-D integer tensor, got torch.float32 of [1, 3]"),
        ("one token past the window", lambda: generate(base, ids, max_new_tokens=CONTEXT - width + 1),
         f"prompt of {width} tokens + max_new_tokens {CONTEXT - width + 1} = {CONTEXT + 1} exceeds the context "
         f"window of {CONTEXT} tokens; lower max_new_tokens or shorten the prompt"),
        ("a prompt longer than the window", lambda: generate(base, torch.ones((1, CONTEXT + 1), dtype=torch.long),
                                                             max_new_tokens=0),
         f"prompt of {CONTEXT + 1} tokens is longer than the context window of {CONTEXT} tokens"),
    )  # fmt: skip
    differing += refusals_differing((call, GenerationError, words) for _, call, words in refusals)
    cases += len(refusals)
    full = torch.ones((1, CONTEXT), dtype=torch.long)
    try:
        nothing = generate(base, full, max_new_tokens=0, return_logits=True)
        got: Any = [nothing.new_tokens, list(nothing.sequences.shape), nothing.scores is None]
    except Exception as exc:
        got = f"{type(exc).__name__}: {exc}"
    check("a prompt filling the window, nothing asked", got, [[[]], [1, CONTEXT], True])

    # sampling settings reach the draw: top-k 1 and a top-p no second token reaches are greedy
    firsts = [t[0] for t in tokens]
    for label, setting in (("top-k 1", {"top_k": 1}), ("top-p 1e-6", {"top_p": 1e-6})):
        drawn = [generate(base, ids, max_new_tokens=1, temperature=1.0, seed=s, **setting).new_tokens for s in range(4)]
        check(f"sampling with {label} draws the greedy token", drawn, [[[f] for f in firsts]] * 4)
    # without the KV cache, a left-padded row still ignores its padding
    padded_ids = torch.tensor([[0, 0, prompts[0][-1]], prompts[1]])
    mask = torch.tensor([[0, 0, 1], [1, 1, 1]])
    with_cache = generate(base, padded_ids, mask, max_new_tokens=3, eos_token_id=[]).new_tokens
    without = generate(base, padded_ids, mask, max_new_tokens=3, eos_token_id=[], use_cache=False).new_tokens
    check("a padded batch decodes alike without the cache", without, with_cache)
    return {"cases": cases, "differing": differing}
