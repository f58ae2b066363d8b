"""FALSIFY-HFI-008 names each precision pairing where the engine's RMSNorm is not transformers'."""

from __future__ import annotations

import pytest
import torch

import engine.model
from engine.faults import FAULTS
from falsifiers.hf_import.rmsnorm_reference import norm_matches_transformers


def test_every_pairing_matches_both_references() -> None:
    assert norm_matches_transformers(0) == {"cases": 72, "differing": []}


def test_a_norm_computed_in_half_precision_is_named_for_the_half_pairings_only() -> None:
    with FAULTS.enabled("norm_half_not_upcast"):
        out = norm_matches_transformers(0)
    assert out["cases"] == 72
    assert out["differing"]
    assert all(not line.startswith("x fp32,") for line in out["differing"])  # float32 activations are unaffected
    assert {line.split(",")[0] for line in out["differing"]} == {"x bf16", "x fp16"}


def test_a_norm_that_drops_its_epsilon_is_named_at_the_large_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_eps(self: engine.model.RMSNorm, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True))).to(x.dtype)

    monkeypatch.setattr(engine.model.RMSNorm, "forward", no_eps)
    differing = norm_matches_transformers(0)["differing"]
    # the row of zeros divides by zero, at either epsilon
    assert "x fp32, weight fp32, eps 1e-06, [2, 5, 64] vs LlamaRMSNorm: 384 of 640 values differ (64 NaN" in "\n".join(
        differing
    )
    assert any(line.startswith("x bf16, weight bf16, eps 0.5, [1, 1, 64] vs Qwen2RMSNorm: ") for line in differing)
