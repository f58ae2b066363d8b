from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from peft import PeftModel

from engine.config import preset
from engine.faults import FAULTS
from engine.lora import (
    ALL_PROJECTIONS,
    LoraSettings,
    apply_lora,
    base_parameters,
    load_adapter,
    lora_parameter_names,
    lora_weights_dtypes,
    merge_adapter,
    prepare_qlora,
    save_adapter,
    swap_adapter,
    trainable_parameter_names,
)
from engine.model import DecoderLM, build_model
from engine.quant import nf4_layers, quantize_model

X = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(3))


def tiny(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    return build_model(preset("tiny", intermediate_size=192))


def train(model: torch.nn.Module, steps: int = 6, lr: float = 1e-2) -> list[float]:
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(X, labels=X).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def logits(model: torch.nn.Module) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model(X).logits


@pytest.mark.parametrize("quantized", [False, True], ids=["lora", "qlora"])
def test_trainable_set_is_exactly_the_lora_weights(quantized: bool) -> None:
    settings = LoraSettings(r=4, alpha=8, targets=("q_proj", "v_proj", "down_proj"))
    model: Any = prepare_qlora(tiny(), settings) if quantized else apply_lora(tiny(), settings)
    expected = sorted(
        f"base_model.model.model.layers.{i}.{mod}.{proj}.lora_{ab}.default.weight"
        for i in range(2)
        for mod, proj in (("self_attn", "q_proj"), ("self_attn", "v_proj"), ("mlp", "down_proj"))
        for ab in "AB"
    )
    assert trainable_parameter_names(model) == expected
    assert set(lora_weights_dtypes(model).values()) == {torch.float32}
    if quantized:
        layer = model.base_model.model.model.layers[0].self_attn.q_proj
        assert type(layer).__module__ == "peft.tuners.lora.bnb"  # PEFT's 4-bit-aware LoRA layer


def test_lora_on_fp16_base_keeps_fp32_adapters() -> None:
    model: Any = apply_lora(tiny().to(torch.float16), LoraSettings(r=4))
    assert set(lora_weights_dtypes(model).values()) == {torch.float32}
    assert model.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight.dtype == torch.float16


@pytest.mark.parametrize("quantized", [False, True], ids=["lora", "qlora"])
def test_training_moves_only_the_adapter(quantized: bool) -> None:
    settings = LoraSettings(r=4, alpha=8, targets=ALL_PROJECTIONS)
    model: Any = prepare_qlora(tiny(), settings) if quantized else apply_lora(tiny(), settings)
    before = base_parameters(model)
    adapters_before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    losses = train(model)
    assert losses[-1] < losses[0]
    after = base_parameters(model)
    assert before.keys() == after.keys()
    for name in before:
        assert torch.equal(before[name], after[name]), f"base tensor {name} changed"
    moved = [n for n, p in model.named_parameters() if p.requires_grad and not torch.equal(p, adapters_before[n])]
    assert len(moved) == len(adapters_before)


def test_base_left_trainable_fault_is_visible() -> None:
    with FAULTS.enabled("base_left_trainable"):
        model = apply_lora(tiny(), LoraSettings(r=4))
    extra = set(trainable_parameter_names(model)) - set(lora_parameter_names(model))
    assert "base_model.model.lm_head.weight" in extra
    before = base_parameters(model)
    train(model, steps=2)
    head = "base_model.model.lm_head.weight"
    assert not torch.equal(before[head], base_parameters(model)[head])


def test_lora_before_nf4_fault_quantizes_the_adapter() -> None:
    with FAULTS.enabled("lora_before_nf4"):
        model = prepare_qlora(tiny(), LoraSettings(r=4))
    dtypes = lora_weights_dtypes(model)
    assert torch.uint8 in set(dtypes.values())
    assert trainable_parameter_names(model) != lora_parameter_names(model)


def test_adapter_round_trip_and_swap(tmp_path: Path) -> None:
    base = tiny()
    first = apply_lora(copy.deepcopy(base), LoraSettings(r=4))
    train(first, steps=3)
    second = apply_lora(copy.deepcopy(base), LoraSettings(r=4, targets=("q_proj", "k_proj")))
    train(second, steps=3, lr=3e-2)
    p1 = save_adapter(first, tmp_path / "first")
    p2 = save_adapter(second, tmp_path / "second")
    assert sorted(x.name for x in p1.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert json.loads((p1 / "adapter_config.json").read_text())["r"] == 4
    # PEFT itself reads the folder
    via_peft = PeftModel.from_pretrained(copy.deepcopy(base), str(p1))
    assert torch.allclose(logits(via_peft), logits(first), atol=1e-6)

    served = load_adapter(copy.deepcopy(base), p1, "first")
    load_adapter(served, p2, "second")
    swap_adapter(served, "first")
    assert torch.allclose(logits(served), logits(first), atol=1e-6)
    swap_adapter(served, "second")
    assert torch.allclose(logits(served), logits(second), atol=1e-6)
    assert not torch.allclose(logits(served), logits(first), atol=1e-4)
    with pytest.raises(KeyError, match="no adapter"):
        swap_adapter(served, "third")
    with pytest.raises(FileNotFoundError, match="not an adapter folder"):
        load_adapter(served, tmp_path / "missing", "third")


def test_merge_full_precision_and_nf4(tmp_path: Path) -> None:
    model = apply_lora(tiny(), LoraSettings(r=4))
    train(model, steps=3)
    expected = logits(model)
    merged = merge_adapter(model)
    assert isinstance(merged, DecoderLM)
    assert torch.allclose(logits(merged), expected, atol=1e-5)

    q = prepare_qlora(tiny(), LoraSettings(r=4))
    train(q, steps=3)
    save_adapter(q, tmp_path / "q")
    expected_q = logits(q)
    exact = merge_adapter(q, dequantize=True)
    assert not list(nf4_layers(exact))
    assert torch.allclose(logits(exact), expected_q, atol=1e-4)
    # PEFT's own merge into NF4 requantizes: close, not exact
    requant = merge_adapter(load_adapter(quantize_model(tiny()), tmp_path / "q"))
    assert list(nf4_layers(requant))
    rel = ((logits(requant) - expected_q).abs().mean() / expected_q.abs().mean()).item()
    assert rel < 0.1


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown LoRA target"):
        LoraSettings(targets=("q_proj", "qkv"))
    with pytest.raises(ValueError, match="rank"):
        LoraSettings(r=0)
