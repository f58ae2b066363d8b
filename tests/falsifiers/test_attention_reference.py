"""FALSIFY-HFI-010 names each prompt length, precision and torch where attention is not transformers'."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.faults import FAULTS
from falsifiers.hf_import.attention_reference import DTYPES, MODELS, compare_all, logits_match_eager_attention


def test_every_length_precision_and_torch_agrees() -> None:
    assert logits_match_eager_attention(0) == {
        "cases": 90,
        "differing": [],
        "older_torch_cases": 90,
        "older_torch_differing": [],
        "older_torch_grouped_flag": False,
    }


def test_tiled_heads_show_only_where_torch_lacks_enable_gqa() -> None:
    with FAULTS.enabled("gqa_fallback_heads_tiled"):
        out = logits_match_eager_attention(0)
    assert out["differing"] == []
    assert out["older_torch_cases"] == 90
    # only where heads are grouped and tiling is not repeating: with one key-value head the two agree
    named = {line.split(", fp")[0].split(", bf")[0] for line in out["older_torch_differing"]}
    assert named == {"llama, 4 heads / 2 kv"}
    assert len(out["older_torch_differing"]) == 30


def test_a_two_token_prompt_that_sees_its_second_token_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def not_causal_for_two(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        if q.shape[2] == 2 and kwargs.get("attn_mask") is None:
            kwargs["is_causal"] = False
        return sdpa(q, k, v, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", not_causal_for_two)
    out = compare_all(0)
    assert out["cases"] == 90
    named = {line.split(": off by")[0] for line in out["differing"]}
    # every model and precision: the 2-token prompt, and the 2-token prefill of decoding (whose
    # wrong keys the later decoding calls then read from the cache); no other prompt length
    assert {line for line in named if "a prompt of" in line} == {
        f"{label}, {dtype}, a prompt of 2 at once" for label in MODELS for dtype in DTYPES
    }
    assert {f"{label}, {dtype}, decoding tokens 0..1 with a cache" for label in MODELS for dtype in DTYPES} <= named
