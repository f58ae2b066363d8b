"""FALSIFY-NF4-007's stand-in for bitsandbytes' CPU answer is undone when the checker returns."""

from __future__ import annotations

import pytest

from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from falsifiers.nf4_quantization.repack_switch import repack_switched_off


def test_the_library_answers_for_itself_again_afterwards() -> None:
    bnb = pytest.importorskip("bitsandbytes")
    before = (bnb.functional.has_avx512bf16, bnb.nn.modules.has_avx512bf16)
    repack_switched_off(make_tiny_model)
    assert (bnb.functional.has_avx512bf16, bnb.nn.modules.has_avx512bf16) == before


def test_a_repack_left_on_shows_on_the_instruction_sets_machine_only() -> None:
    pytest.importorskip("bitsandbytes")
    with FAULTS.enabled("bf16_repack_left_on"):
        out = repack_switched_off(make_tiny_model)
    assert out["quantized_with_avx"] == ["True"]
    assert out["quantized_without"] == ["False"]
