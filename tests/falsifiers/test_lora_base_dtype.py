"""FALSIFY-LORA-018 names each base tensor a LoRA or QLoRA wrapping changed, and each adapter matrix not fp32."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import engine.lora
import falsifiers.lora_trains_base_frozen.lora_base_dtype as checker_module
from engine.faults import FAULTS
from falsifiers.lora_trains_base_frozen.lora_base_dtype import lora_leaves_base_dtype


def test_wrapping_leaves_every_kept_base_tensor_as_it_was() -> None:
    out = lora_leaves_base_dtype()
    assert out == {"wrappings": 6, "base_kept": 90, "base_differing": [], "lora_not_fp32": []}


def test_a_base_upcast_with_its_adapters_is_named() -> None:
    with FAULTS.enabled("lora_base_upcast"):
        out = lora_leaves_base_dtype()
    assert out["lora_not_fp32"] == []
    wrappings = {line.split(":")[0] for line in out["base_differing"]}
    assert wrappings == {
        f"{wrap} over {dtype}" for wrap in ("apply_lora", "prepare_qlora") for dtype in ("bf16", "fp16")
    }
    assert "apply_lora over bf16: model.norm.weight is torch.float32, was torch.bfloat16" in out["base_differing"]


def test_adapters_left_in_the_base_precision_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    wrap = engine.lora.apply_lora

    def half_adapters(model: Any, *args: Any, **kwargs: Any) -> Any:
        wrapped = wrap(model, *args, **kwargs)
        dtype = next(p.dtype for n, p in wrapped.named_parameters() if ".lora_" not in n)
        for name, p in wrapped.named_parameters():
            if ".lora_" in name:
                p.data = p.data.to(dtype)
        return wrapped

    monkeypatch.setattr(engine.lora, "apply_lora", half_adapters)  # what prepare_qlora calls
    monkeypatch.setattr(checker_module, "apply_lora", half_adapters)  # what the checker calls
    out = lora_leaves_base_dtype()
    assert out["base_differing"] == []
    named = {line.split(":")[0] for line in out["lora_not_fp32"]}
    # prepare_qlora wraps through apply_lora, so its adapters are left in half precision too
    assert named == {
        f"{wrap} over {dtype}" for wrap in ("half_adapters", "prepare_qlora") for dtype in ("bf16", "fp16")
    }
    assert all(line.endswith((str(torch.bfloat16), str(torch.float16))) for line in out["lora_not_fp32"])
