"""The QA gates at their edges: the shortest texts perplexity scores, the last window of a long
one, a model whose logits overflow, and a cached decode that stops early.

``engine.qa.perplexity`` documents exp(mean next-token cross-entropy) over the text in windows of
the model's context, consecutive windows sharing one token so that every next token is scored
once.  The reference here cuts the windows itself and sums ``F.cross_entropy`` over the model's
own logits: a text of exactly two tokens scores one, a text one token longer than the context
scores every token (its last window is two tokens long), and a text of one token is refused.  A
model whose logits overflow fails the perplexity gate with the non-finite value and the bound it
was given.  The golden gate without a golden file compares greedy decoding with and without the
KV cache; a cached decode that stops a token early (here a stand-in for the two decodes) must fail
the gate at the missing token, not crash on the length difference.  The throughput gate must time
decoding as generation runs it, with the KV cache: one token per forward after the prompt.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import torch.nn.functional as F

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.qa import QAError, QAOptions, perplexity, run_qa
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

CONTEXT = 8  # max_position_embeddings of the model scored here
SENTENCE = "def moving_average(values, window): return sum(values[-window:]) / window"


def _text_of(tok: EngineTokenizer, n: int) -> str:
    """The shortest prefix of SENTENCE whose prompt encoding is exactly ``n`` ids."""
    for end in range(len(SENTENCE) + 1):
        if len(tok.encode_prompt(SENTENCE[:end])) == n:
            return SENTENCE[:end]
    raise AssertionError(f"no prefix of the sentence encodes to {n} ids")


def _reference(model: Any, ids: list[int]) -> tuple[float, int]:
    """Windows of CONTEXT ids, each starting where the last one's final id is."""
    total, count = 0.0, 0
    start = 0
    while start < len(ids) - 1:
        chunk = ids[start : start + CONTEXT]
        with torch.no_grad():
            logits = model(torch.tensor([chunk])).logits[0].float()
        total += float(F.cross_entropy(logits[:-1], torch.tensor(chunk[1:]), reduction="sum"))
        count += len(chunk) - 1
        start += CONTEXT - 1
    return math.exp(total / count), count


@checker(
    observes=["scored", "perplexity_differing", "short_refusal", "overflow_gate", "early_stop_gate", "cached_decoding"],
    ids=["FALSIFY-QAG-009"],
)
def gates_at_their_edges(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """perplexity on texts of 1, 2, CONTEXT + 1 and 2 x CONTEXT ids; the perplexity gate of a model
    whose logits overflow; the golden gate over a cached decode one token shorter; the forwards the
    throughput gate's decodes make."""

    work = fresh_dir(tmp_path, "qa-edges-")
    model = tiny_model_factory(0, std=0.2, max_position_embeddings=CONTEXT, vocab_size=engine_tokenizer.vocab_size)
    path = save_checkpoint(work / "small-context.safetensors", model, engine_tokenizer, make_manifest(step=0))
    loaded = load_checkpoint(path)

    scored, differing = [], []
    for n in (2, CONTEXT + 1, 2 * CONTEXT):
        text = _text_of(engine_tokenizer, n)
        try:
            got, count = perplexity(loaded, text)
        except Exception as exc:  # a text scored as if it had no token is a difference, not a crash
            scored.append([n, f"{type(exc).__name__}: {exc}"])
            continue
        want, want_count = _reference(model, engine_tokenizer.encode_prompt(text))
        scored.append([n, count])
        if count != want_count or not math.isclose(got, want, rel_tol=1e-5):
            differing.append([n, got, want, count, want_count])
    try:
        perplexity(loaded, _text_of(engine_tokenizer, 1))
        short = "not refused"
    except QAError as exc:
        short = str(exc)

    # finite weights, overflowing logits: the final norm and the head scaled far up
    loud = tiny_model_factory(0, std=0.2, vocab_size=engine_tokenizer.vocab_size)
    with torch.no_grad():
        loud.model.norm.weight.fill_(1e20)
        loud.lm_head.weight.mul_(1e20)
    loud_path = save_checkpoint(work / "overflow.safetensors", loud, engine_tokenizer, make_manifest(step=0))
    text = _text_of(engine_tokenizer, 6)
    gate = run_qa(loud_path, QAOptions(gates=("perplexity",), max_perplexity=5.0, text=text)).gate("perplexity")
    overflow = [gate.status, gate.value is not None and not math.isfinite(gate.value), gate.bound, gate.detail]

    # the golden gate's two decodes, stood in for: the cached one stops a token before the other
    steps = torch.zeros(3, engine_tokenizer.vocab_size)

    def decode(_loaded: Any, _prompt: str, _n: int, use_cache: bool = True) -> tuple[list[int], torch.Tensor]:
        return ([5, 6], steps[:2]) if use_cache else ([5, 6, 7], steps)

    with mock.patch("engine.qa._decode", decode):
        golden = run_qa(path, QAOptions(gates=("golden",))).gate("golden")
    early = [golden.status, golden.value, golden.bound, golden.detail]

    # the throughput gate times decoding as generation runs it, with the KV cache: after each
    # prompt's forward, one token per forward (a forward pre-hook on the embedding sees the ids)
    widths: list[int] = []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: widths.append(args[0].shape[-1]) if isinstance(module, torch.nn.Embedding) else None
    )
    try:
        run_qa(path, QAOptions(gates=("throughput",), throughput_tokens=4))
    finally:
        hook.remove()
    prompts = sum(w > 1 for w in widths)
    return {
        "scored": scored,
        "perplexity_differing": differing,
        "short_refusal": short,
        "overflow_gate": overflow,
        "early_stop_gate": early,
        "cached_decoding": [prompts, sum(w == 1 for w in widths) == len(widths) - prompts, len(widths) > prompts],
    }
