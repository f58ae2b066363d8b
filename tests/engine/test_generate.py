from __future__ import annotations

import pytest
import torch

from engine.errors import GenerationError
from engine.faults import FAULTS
from engine.generate import choose_next, filter_logits, generate, pad_prompts
from engine.model import DecoderLM
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model

EOS = 1
PAD = 2


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    # A wide init spreads the logits, so greedy choices are far from ties and comparisons are sharp.
    return tiny_model(std=0.3)


def _prompts() -> list[list[int]]:
    return [[5, 9, 13, 200, 31], [7, 8], [100, 101, 102, 103, 104, 105, 106, 107]]


def test_cached_and_uncached_logits_agree(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13, 200, 31, 40]])
    a = generate(model, ids, max_new_tokens=12, eos_token_id=[], use_cache=True, return_logits=True)
    b = generate(model, ids, max_new_tokens=12, eos_token_id=[], use_cache=False, return_logits=True)
    assert a.scores is not None and b.scores is not None
    assert a.scores.shape == (1, 12, 512)
    torch.testing.assert_close(a.scores, b.scores, atol=1e-4, rtol=1e-4)
    assert torch.equal(a.sequences, b.sequences)


def test_cached_forward_equals_full_forward_at_every_position(model: DecoderLM) -> None:
    ids = torch.randint(3, 512, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(ids).logits
        out = model(ids[:, :4], use_cache=True)
        steps = [out.logits]
        for t in range(4, 10):
            out = model(ids[:, t : t + 1], past_key_values=out.past_key_values)
            steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-4, rtol=1e-4)


def test_chunked_prefill_matches_full_forward(model: DecoderLM) -> None:
    ids = torch.randint(3, 512, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids).logits
        first = model(ids[:, :5], use_cache=True)
        second = model(ids[:, 5:], past_key_values=first.past_key_values)
    torch.testing.assert_close(torch.cat([first.logits, second.logits], 1), full, atol=1e-4, rtol=1e-4)


def test_kv_cache_off_by_one_fault_breaks_cached_decoding(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13, 200, 31, 40]])
    with FAULTS.enabled("kv_cache_off_by_one"):
        cached = generate(model, ids, max_new_tokens=6, eos_token_id=[], return_logits=True)
        uncached = generate(model, ids, max_new_tokens=6, eos_token_id=[], use_cache=False, return_logits=True)
    assert cached.scores is not None and uncached.scores is not None
    # The first token comes from the prefill, which has no past and so no offset.
    torch.testing.assert_close(cached.scores[:, 0], uncached.scores[:, 0], atol=1e-4, rtol=1e-4)
    assert (cached.scores[:, 1:] - uncached.scores[:, 1:]).abs().max() > 1e-2


def test_greedy_is_argmax_and_repeatable(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    out = generate(model, ids, max_new_tokens=5, eos_token_id=[], return_logits=True)
    assert out.scores is not None
    assert out.new_tokens[0] == out.scores[0].argmax(-1).tolist()
    assert generate(model, ids, max_new_tokens=5, eos_token_id=[]).new_tokens == out.new_tokens


def test_greedy_noise_fault_departs_from_argmax(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    clean = generate(model, ids, max_new_tokens=24, eos_token_id=[]).new_tokens
    torch.manual_seed(0)
    with FAULTS.enabled("greedy_sampling_noise"):
        noisy = generate(model, ids, max_new_tokens=24, eos_token_id=[]).new_tokens
    assert noisy != clean


def test_exactly_max_new_tokens_without_eos(model: DecoderLM) -> None:
    out = generate(model, torch.tensor([[5, 9]]), max_new_tokens=17, eos_token_id=[])
    assert len(out.new_tokens[0]) == 17
    assert out.sequences.shape == (1, 19)
    assert out.finished == [False]


def test_zero_new_tokens(model: DecoderLM) -> None:
    out = generate(model, torch.tensor([[5, 9]]), max_new_tokens=0)
    assert out.new_tokens == [[]] and out.sequences.tolist() == [[5, 9]]


def test_stops_on_eos_per_row(model: DecoderLM) -> None:
    ids, mask = pad_prompts(_prompts(), PAD)
    free = generate(model, ids, mask, max_new_tokens=10, eos_token_id=[], pad_token_id=PAD)
    eos = free.new_tokens[0][3]  # row 0 emits this at step 3: call it the EOS
    assert eos not in free.new_tokens[0][:3]
    out = generate(model, ids, mask, max_new_tokens=10, eos_token_id=eos, pad_token_id=PAD)
    assert out.new_tokens[0] == free.new_tokens[0][:4]
    assert out.finished[0]
    width = ids.shape[1]
    assert out.sequences[0, width + 4 :].eq(PAD).all()
    for row in (1, 2):
        tokens = free.new_tokens[row]
        stop = tokens.index(eos) + 1 if eos in tokens else len(tokens)
        assert out.new_tokens[row] == tokens[:stop]


def test_generation_ends_when_every_row_hit_eos(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    free = generate(model, ids, max_new_tokens=8, eos_token_id=[])
    eos = free.new_tokens[0][2]
    out = generate(model, ids, max_new_tokens=8, eos_token_id=eos)
    assert out.sequences.shape[1] == 3 + free.new_tokens[0].index(eos) + 1


def test_eos_ignored_fault_runs_to_max(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    eos = generate(model, ids, max_new_tokens=8, eos_token_id=[]).new_tokens[0][2]
    with FAULTS.enabled("eos_ignored"):
        out = generate(model, ids, max_new_tokens=8, eos_token_id=eos)
    assert len(out.new_tokens[0]) == 8 and out.finished == [False]


def test_eos_defaults_to_model_config() -> None:
    model = tiny_model(std=0.3)
    ids = torch.tensor([[5, 9, 13]])
    eos = generate(model, ids, max_new_tokens=6, eos_token_id=[]).new_tokens[0][1]
    model.config = model.config.replace(eos_token_id=eos)
    assert generate(model, ids, max_new_tokens=6).finished == [True]


def test_batched_left_padded_equals_one_by_one(model: DecoderLM) -> None:
    prompts = _prompts()
    ids, mask = pad_prompts(prompts, PAD)
    assert mask.tolist()[1] == [0, 0, 0, 0, 0, 0, 1, 1]
    batched = generate(model, ids, mask, max_new_tokens=9, eos_token_id=[], return_logits=True)
    for row, prompt in enumerate(prompts):
        single = generate(model, torch.tensor([prompt]), max_new_tokens=9, eos_token_id=[], return_logits=True)
        assert batched.new_tokens[row] == single.new_tokens[0]
        assert batched.scores is not None and single.scores is not None
        torch.testing.assert_close(batched.scores[row], single.scores[0], atol=1e-4, rtol=1e-4)


def test_batched_uncached_matches_cached(model: DecoderLM) -> None:
    ids, mask = pad_prompts(_prompts(), PAD)
    a = generate(model, ids, mask, max_new_tokens=6, eos_token_id=[], return_logits=True)
    b = generate(model, ids, mask, max_new_tokens=6, eos_token_id=[], use_cache=False, return_logits=True)
    assert a.scores is not None and b.scores is not None
    torch.testing.assert_close(a.scores, b.scores, atol=1e-4, rtol=1e-4)


def test_sampling_is_seeded_per_call(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    kw = {"max_new_tokens": 20, "temperature": 1.5, "eos_token_id": []}
    a = generate(model, ids, seed=123, **kw).new_tokens  # type: ignore[arg-type]
    torch.manual_seed(999)  # the global RNG must not matter
    assert generate(model, ids, seed=123, **kw).new_tokens == a  # type: ignore[arg-type]
    assert generate(model, ids, seed=124, **kw).new_tokens != a  # type: ignore[arg-type]


def test_sampling_does_not_touch_global_rng(model: DecoderLM) -> None:
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    generate(model, torch.tensor([[5, 9]]), max_new_tokens=5, temperature=1.0, seed=1)
    assert torch.equal(torch.rand(3), expected)


def test_top_k_one_is_greedy(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    greedy = generate(model, ids, max_new_tokens=10, eos_token_id=[]).new_tokens
    assert (
        generate(model, ids, max_new_tokens=10, temperature=2.0, top_k=1, seed=0, eos_token_id=[]).new_tokens == greedy
    )


def test_top_p_tiny_is_greedy(model: DecoderLM) -> None:
    ids = torch.tensor([[5, 9, 13]])
    greedy = generate(model, ids, max_new_tokens=10, eos_token_id=[]).new_tokens
    out = generate(model, ids, max_new_tokens=10, temperature=1.0, top_p=1e-6, seed=0, eos_token_id=[])
    assert out.new_tokens == greedy


def test_filter_logits_top_k_and_top_p() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.15, 0.1]]))
    assert torch.isinf(filter_logits(logits, 2, None)).tolist() == [[False, False, True, True]]
    # Nucleus 0.7: 0.5 alone is short of it, 0.5 + 0.25 reaches it -> two tokens kept.
    assert torch.isinf(filter_logits(logits, None, 0.7)).tolist() == [[False, False, True, True]]
    assert torch.isinf(filter_logits(logits, None, 0.8)).tolist() == [[False, False, False, True]]
    assert not torch.isinf(filter_logits(logits, None, 1.0)).any()


def test_sampled_tokens_stay_inside_top_k() -> None:
    logits = torch.arange(10, dtype=torch.float32).repeat(500, 1)
    g = torch.Generator().manual_seed(0)
    picks = choose_next(logits, 1.0, 3, None, g)
    assert set(picks.tolist()) == {7, 8, 9}


def test_temperature_sampling_follows_softmax() -> None:
    probs = torch.tensor([0.6, 0.3, 0.1])
    logits = probs.log().repeat(20000, 1)
    picks = choose_next(logits, 1.0, None, None, torch.Generator().manual_seed(0))
    freq = torch.bincount(picks, minlength=3).float() / picks.numel()
    torch.testing.assert_close(freq, probs, atol=0.02, rtol=0)


def test_qwen2_config_generates_with_cache() -> None:
    model = tiny_model(qwen2_tiny_config(), std=0.3)
    ids = torch.tensor([[5, 9, 13, 14]])
    a = generate(model, ids, max_new_tokens=6, eos_token_id=[], return_logits=True)
    b = generate(model, ids, max_new_tokens=6, eos_token_id=[], use_cache=False, return_logits=True)
    assert a.scores is not None and b.scores is not None
    torch.testing.assert_close(a.scores, b.scores, atol=1e-4, rtol=1e-4)


def test_generate_restores_training_mode(model: DecoderLM) -> None:
    model.train()
    try:
        generate(model, torch.tensor([[5]]), max_new_tokens=2)
        assert model.training
    finally:
        model.eval()


# --- bad input -------------------------------------------------------------------------------


def test_prompt_longer_than_context_window() -> None:
    model = tiny_model(tiny_config(max_position_embeddings=16))
    with pytest.raises(GenerationError, match="prompt of 20 tokens is longer than the context window of 16"):
        generate(model, torch.ones(1, 20, dtype=torch.long), max_new_tokens=1)


def test_prompt_plus_new_tokens_beyond_context_window() -> None:
    model = tiny_model(tiny_config(max_position_embeddings=16))
    with pytest.raises(GenerationError, match=r"10 tokens \+ max_new_tokens 7 = 17 exceeds the context window of 16"):
        generate(model, torch.ones(1, 10, dtype=torch.long), max_new_tokens=7)
    assert len(generate(model, torch.ones(1, 10, dtype=torch.long), max_new_tokens=6).new_tokens[0]) <= 6


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_new_tokens": -1}, "max_new_tokens must be a non-negative int"),
        ({"max_new_tokens": 2, "temperature": -0.1}, "temperature must be >= 0"),
        ({"max_new_tokens": 2, "temperature": 1.0, "top_k": 0}, "top_k must be >= 1"),
        ({"max_new_tokens": 2, "temperature": 1.0, "top_p": 0.0}, r"top_p must be in \(0, 1\]"),
        ({"max_new_tokens": 2, "temperature": 1.0, "top_p": 1.5}, r"top_p must be in \(0, 1\]"),
    ],
)
def test_bad_arguments(model: DecoderLM, kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(GenerationError, match=message):
        generate(model, torch.tensor([[5, 9]]), **kwargs)


def test_bad_inputs(model: DecoderLM) -> None:
    with pytest.raises(GenerationError, match="outside"):
        generate(model, torch.tensor([[5, 600]]), max_new_tokens=1)
    with pytest.raises(GenerationError, match="2-D integer tensor"):
        generate(model, torch.ones(1, 2, 3, dtype=torch.long), max_new_tokens=1)
    with pytest.raises(GenerationError, match="2-D integer tensor"):
        generate(model, torch.ones(1, 2), max_new_tokens=1)
    with pytest.raises(GenerationError, match="attention_mask has shape"):
        generate(model, torch.tensor([[5, 9]]), torch.ones(1, 3, dtype=torch.long), max_new_tokens=1)
    with pytest.raises(GenerationError, match="no real token"):
        generate(model, torch.tensor([[5, 9]]), torch.zeros(1, 2, dtype=torch.long), max_new_tokens=1)
    with pytest.raises(GenerationError, match="prompt is empty"):
        generate(model, torch.ones(1, 0, dtype=torch.long), max_new_tokens=1)
    with pytest.raises(GenerationError, match="a prompt is empty"):
        pad_prompts([[1], []], PAD)
    with pytest.raises(GenerationError, match="no prompts"):
        pad_prompts([], PAD)


def test_one_dimensional_prompt_is_a_batch_of_one(model: DecoderLM) -> None:
    a = generate(model, torch.tensor([5, 9, 13]), max_new_tokens=3, eos_token_id=[])
    b = generate(model, torch.tensor([[5, 9, 13]]), max_new_tokens=3, eos_token_id=[])
    assert a.new_tokens == b.new_tokens
