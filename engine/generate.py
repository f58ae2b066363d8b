"""Autoregressive decoding: KV cache, greedy / temperature / top-k / top-p sampling, EOS stops.

Prompts in a batch are left-padded (:func:`pad_prompts`) so every row's next token sits in the
last column.  Each call owns a ``torch.Generator`` seeded from ``seed``, so a seeded sampled run
repeats exactly and never disturbs (or depends on) the global RNG.  Decoding stops for a row at
its first EOS and for the batch when every row has stopped or ``max_new_tokens`` were produced;
without an EOS a row gets exactly ``max_new_tokens`` new tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from engine.errors import GenerationError
from engine.faults import FAULTS
from engine.model import DecoderLM, KVCache, evaluating, fused_layers


@dataclass
class GenerationOutput:
    sequences: torch.Tensor
    """[batch, prompt_width + steps]: the (left-padded) prompt then the new tokens; after a row's
    EOS its remaining columns hold ``pad_token_id``."""
    new_tokens: list[list[int]]
    """Each row's generated tokens, up to and including its EOS."""
    finished: list[bool]
    """Whether each row stopped on EOS (False: it ran to ``max_new_tokens``)."""
    scores: torch.Tensor | None = None
    """[batch, steps, vocab] float32 logits each step was chosen from (``return_logits=True``)."""

    @property
    def prompt_width(self) -> int:
        return self.sequences.shape[1] - self.steps

    @property
    def steps(self) -> int:
        return max((len(t) for t in self.new_tokens), default=0)


def pad_prompts(
    prompts: Sequence[Sequence[int]], pad_id: int, device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists into (input_ids, attention_mask) tensors."""
    if not prompts:
        raise GenerationError("no prompts given")
    if any(len(p) == 0 for p in prompts):
        raise GenerationError("a prompt is empty; start it with the BOS token at least")
    width = max(len(p) for p in prompts)
    # Python ints make int64 (torch.long) tensors, the dtype the model's embedding reads
    ids = torch.tensor([[pad_id] * (width - len(p)) + list(p) for p in prompts], device=device)
    mask = torch.tensor([[False] * (width - len(p)) + [True] * len(p) for p in prompts], device=device)
    return ids, mask.long()


def _check_args(
    model: DecoderLM,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
) -> None:
    if FAULTS.active("generate_args_unchecked"):
        return  # the defect: every request goes straight to decoding  # pragma: no mutate
    if input_ids.dim() != 2 or input_ids.dtype not in (torch.long, torch.int32, torch.int64):
        shape = list(input_ids.shape)
        raise GenerationError(f"input_ids must be a 2-D integer tensor, got {input_ids.dtype} of {shape}")
    if input_ids.shape[1] == 0:
        raise GenerationError("the prompt is empty")
    if attention_mask.shape != input_ids.shape:
        raise GenerationError(
            f"attention_mask has shape {list(attention_mask.shape)}, input_ids {list(input_ids.shape)}"
        )
    if not bool((attention_mask.sum(-1) > 0).all()):
        raise GenerationError("a row of attention_mask has no real token")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise GenerationError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
    if temperature < 0:
        raise GenerationError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise GenerationError(f"top_k must be >= 1, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise GenerationError(f"top_p must be in (0, 1], got {top_p}")
    vocab = model.config.vocab_size
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab:
        raise GenerationError(f"input_ids hold token ids outside [0, {vocab})")
    ctx = model.config.max_position_embeddings
    width = input_ids.shape[1]
    if width > ctx:
        raise GenerationError(f"prompt of {width} tokens is longer than the context window of {ctx} tokens")
    if width + max_new_tokens > ctx:
        raise GenerationError(
            f"prompt of {width} tokens + max_new_tokens {max_new_tokens} = {width + max_new_tokens} "
            f"exceeds the context window of {ctx} tokens; lower max_new_tokens or shorten the prompt"
        )


def filter_logits(logits: torch.Tensor, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """Set logits outside the top-k / nucleus (top-p) sets to -inf; the best token always stays."""
    if top_k is not None and top_k < logits.shape[-1]:
        keep = top_k + 1 if FAULTS.active("top_k_off_by_one") and top_k + 1 < logits.shape[-1] else top_k
        kth = torch.topk(logits, keep, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        # Drop a token when the tokens ranked above it already reach top_p.
        drop_sorted = (probs.cumsum(-1) - probs) >= top_p
        if FAULTS.active("top_p_drops_the_crossing_token"):  # pragma: no mutate
            drop_sorted = probs.cumsum(-1) >= top_p  # pragma: no mutate  (the defect: p's own token dropped)
        if FAULTS.active("top_p_keeps_token_at_exactly_p"):  # pragma: no mutate
            drop_sorted = (probs.cumsum(-1) - probs) > top_p  # pragma: no mutate  (the defect: ties at p kept)
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def choose_next(
    logits: torch.Tensor,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator: torch.Generator,
) -> torch.Tensor:
    """Next token per row from float32 logits [batch, vocab]."""
    if temperature == 0.0:
        if FAULTS.active("greedy_sampling_noise"):
            # The planted defect: noise from the global RNG, so greedy is neither argmax nor repeatable.
            noise = torch.randn(logits.shape, device=logits.device) * logits.std(-1, keepdim=True)  # pragma: no mutate
            logits = logits + noise  # pragma: no mutate
        return logits.argmax(-1)
    if FAULTS.active("temperature_after_filter"):
        # the defect: the top-k / nucleus sets chosen on the raw logits, the temperature applied after
        logits = filter_logits(logits, top_k, top_p) / temperature  # pragma: no mutate
    else:
        logits = filter_logits(logits / temperature, top_k, top_p)
    probs = logits.softmax(-1)
    # The planted defect draws from the global RNG: the call's seed no longer decides the draw.
    draw_from = None if FAULTS.active("sampling_global_rng") else generator
    return torch.multinomial(probs, 1, generator=draw_from).squeeze(-1)


def generate(
    model: DecoderLM,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    eos_token_id: int | Sequence[int] | None = None,
    pad_token_id: int | None = None,
    use_cache: bool = True,
    return_logits: bool = False,
) -> GenerationOutput:
    """Decode up to ``max_new_tokens`` tokens after each (left-padded) prompt row.

    ``temperature == 0`` is greedy; otherwise tokens are sampled from ``softmax(logits / T)``
    restricted to ``top_k`` / ``top_p``.  ``eos_token_id`` defaults to the model config's;
    ``pad_token_id`` (what fills a row after its EOS) to the config's pad, else the EOS.
    ``use_cache=False`` re-runs the whole sequence every step: slower, same result.
    Float32 layers of plain linears decode through :func:`engine.model.fused_layers`, which holds
    a rearranged copy of their q/k/v and gate/up weights for the duration of the call.
    """
    if input_ids.dim() == 1:
        input_ids = input_ids[None]
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    _check_args(model, input_ids, attention_mask, max_new_tokens, temperature, top_k, top_p)
    cfg = model.config
    if eos_token_id is None:
        eos_token_id = cfg.eos_token_id
    eos_ids = [] if eos_token_id is None else ([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id))
    if FAULTS.active("eos_ignored"):
        eos_ids = []  # pragma: no mutate
    if pad_token_id is None:
        pad_token_id = cfg.pad_token_id if cfg.pad_token_id is not None else (eos_ids[0] if eos_ids else 0)
        if FAULTS.active("generate_pad_ignores_config"):  # the defect: the EOS fills after a row's end
            pad_token_id = eos_ids[0] if eos_ids else 0  # pragma: no mutate

    # every working tensor is made from the (long) prompt: its dtype and device, wherever it lives
    input_ids = input_ids.long()
    batch, width = input_ids.shape
    total = width + max_new_tokens
    seq = input_ids.new_full((batch, total), pad_token_id)
    seq[:, :width] = input_ids
    mask = input_ids.new_ones((batch, total))
    mask[:, :width] = attention_mask  # cast and moved by the copy: a float or bool mask reads as 0/1
    eos_tensor = input_ids.new_tensor(eos_ids)
    finished = input_ids.new_zeros(batch, dtype=torch.bool)
    lengths = input_ids.new_full((batch,), max_new_tokens)
    generator = torch.Generator(device=input_ids.device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    scores: list[torch.Tensor] = []

    # The planted defect: the loop bound counts the prompt's last logits as a produced token.
    limit = max_new_tokens - 1 if FAULTS.active("max_tokens_off_by_one") and max_new_tokens > 0 else max_new_tokens
    steps = 0
    with evaluating(model), torch.inference_mode(), fused_layers(model):
        cache: KVCache | None = None
        if max_new_tokens > 0:
            out = model(input_ids=seq[:, :width], attention_mask=mask[:, :width], use_cache=use_cache, logits_to_keep=1)
            cache = out.past_key_values
            logits = out.logits[:, -1].float()
        for step in range(limit):
            pos = width + step
            if return_logits:
                scores.append(logits)
            nxt = choose_next(logits, temperature, top_k, top_p, generator)
            steps = step + 1
            if eos_ids:
                nxt = nxt.masked_fill(finished, pad_token_id)
                hit = torch.isin(nxt, eos_tensor) & ~finished
                lengths = torch.where(hit, torch.full_like(lengths, steps), lengths)
                finished = finished | hit
            seq[:, pos] = nxt
            # the planted defect: the whole batch stops when its first row finishes
            done = finished.any() if FAULTS.active("batch_stops_at_first_eos") else finished.all()
            if eos_ids and bool(done):
                break
            if steps == limit:
                break
            if use_cache:
                # New tokens are real: the cache carries the prompt's padding and each row's position.
                out = model(input_ids=seq[:, pos : pos + 1], past_key_values=cache)
            else:
                out = model(input_ids=seq[:, : pos + 1], attention_mask=mask[:, : pos + 1])
            logits = out.logits[:, -1].float()

    sequences = seq[:, : width + steps]
    lengths_list = [min(int(n), steps) for n in lengths.tolist()]
    new_tokens = [sequences[row, width : width + n].tolist() for row, n in enumerate(lengths_list)]
    return GenerationOutput(
        sequences=sequences,
        new_tokens=new_tokens,
        finished=[bool(f) for f in finished.tolist()],
        scores=torch.stack(scores, dim=1) if return_logits and scores else None,
    )
