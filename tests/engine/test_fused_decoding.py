"""The decode fast path (engine.model.fused_layers): same numbers as the modules, only where it may run."""

from __future__ import annotations

import pytest
import torch

from engine.generate import generate, pad_prompts
from engine.lora import LoraSettings, apply_lora
from engine.model import DecoderLM, RMSNorm, fused_layers
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model


def _model(qwen2: bool = False) -> DecoderLM:
    model = tiny_model(qwen2_tiny_config() if qwen2 else tiny_config(), std=0.3)
    # Norm weights away from 1, so folding them into the wrong columns would show.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, RMSNorm):
                m.weight.uniform_(0.5, 1.5)
    return model


@pytest.mark.parametrize("qwen2", [False, True], ids=["llama", "qwen2-bias"])
def test_fused_layers_compute_what_the_modules_compute(qwen2: bool) -> None:
    model = _model(qwen2)
    ids, mask = pad_prompts([[5, 9, 13, 200, 31, 40, 7], [7, 8, 9]], pad_id=2)
    with torch.inference_mode():
        plain = model(ids, attention_mask=mask).logits
        with fused_layers(model):
            assert all(layer.fused is not None for layer in model.model.layers)
            fused = model(ids, attention_mask=mask).logits
    assert all(layer.fused is None for layer in model.model.layers)
    torch.testing.assert_close(fused, plain, atol=2e-5, rtol=1e-5)
    assert not torch.equal(fused, model(ids, attention_mask=torch.ones_like(mask)).logits)  # the mask mattered


def test_generate_decodes_through_fused_layers_and_matches_the_plain_forward() -> None:
    model = _model()
    calls: list[bool] = []
    layer = model.model.layers[0]
    handle = layer.register_forward_pre_hook(lambda mod, args: calls.append(mod.fused is not None))
    try:
        ids, mask = pad_prompts([[5, 9, 13, 200], [7, 8]], pad_id=2)
        out = generate(model, ids, mask, max_new_tokens=8, eos_token_id=[], return_logits=True)
    finally:
        handle.remove()
    assert calls and all(calls)
    assert out.scores is not None
    full_mask = torch.cat([mask, torch.ones(2, 8, dtype=mask.dtype)], 1)
    with torch.inference_mode():
        full = model(out.sequences, attention_mask=full_mask).logits
    torch.testing.assert_close(out.scores, full[:, 3:11], atol=2e-5, rtol=1e-5)


def test_layers_wrapped_by_lora_are_not_fused() -> None:
    model = apply_lora(_model(), LoraSettings(r=4, alpha=8))
    base: DecoderLM = model.get_base_model()  # type: ignore[assignment]
    with fused_layers(model):
        assert [layer.fused for layer in base.model.layers] == [None, None]
    # LoRA-B starts at zero: move it, so a generate that skipped the adapter would differ.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    ids = torch.tensor([[5, 9, 13, 200]])
    out = generate(model, ids, max_new_tokens=4, eos_token_id=[], return_logits=True)
    with torch.inference_mode():
        reference = model(input_ids=out.sequences).logits[:, 3:7]
    assert out.scores is not None
    torch.testing.assert_close(out.scores, reference, atol=1e-4, rtol=1e-4)


def test_half_precision_layers_are_not_fused() -> None:
    model = _model().to(torch.bfloat16)
    with fused_layers(model):
        assert all(layer.fused is None for layer in model.model.layers)


def test_fused_weights_are_dropped_when_generation_fails() -> None:
    model = _model()
    with pytest.raises(RuntimeError, match="boom"), fused_layers(model):
        assert model.model.layers[0].fused is not None
        raise RuntimeError("boom")
    assert all(layer.fused is None for layer in model.model.layers)


def test_decode_step_without_a_mask_uses_the_cached_padding_and_positions() -> None:
    model = _model()
    ids, mask = pad_prompts([[5, 9, 13, 200], [7, 8]], pad_id=2)
    nxt = torch.tensor([[11], [12]])
    with torch.inference_mode():
        first = model(ids, attention_mask=mask, use_cache=True)
        assert first.past_key_values is not None
        implicit = model(nxt, past_key_values=first.past_key_values).logits
        again = model(ids, attention_mask=mask, use_cache=True)
        explicit_mask = torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], 1)
        explicit = model(nxt, attention_mask=explicit_mask, past_key_values=again.past_key_values).logits
    torch.testing.assert_close(implicit, explicit, atol=0.0, rtol=0.0)


def test_a_mask_of_the_wrong_width_is_named() -> None:
    model = _model()
    with torch.inference_mode():
        out = model(torch.tensor([[5, 9, 13]]), use_cache=True)
        with pytest.raises(ValueError, match=r"attention_mask has shape \[1, 1\]; expected \[1, 4\]"):
            model(torch.tensor([[4]]), attention_mask=torch.ones(1, 1), past_key_values=out.past_key_values)


def test_logits_to_keep_gives_the_last_positions() -> None:
    model = _model()
    ids = torch.tensor([[5, 9, 13, 200, 31]])
    with torch.inference_mode():
        full = model(ids).logits
        last = model(ids, logits_to_keep=2).logits
    assert last.shape == (1, 2, full.shape[-1])
    torch.testing.assert_close(last, full[:, -2:])
    with pytest.raises(ValueError, match="logits_to_keep and labels"):
        model(ids, labels=ids, logits_to_keep=1)
