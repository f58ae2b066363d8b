"""FALSIFY-EVAL-002 skips, never passes or fails, where bitsandbytes cannot repack a CPU weight."""

from __future__ import annotations

import pytest

from falsifiers.eval_mode_gradient_safety.packed_weight import NO_REPACK, packed_weight_refused


def test_a_library_without_the_repack_is_a_skip_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # bitsandbytes' CUDA build (what a GPU machine loads) answers False whatever the CPU has
    bnb = pytest.importorskip("bitsandbytes")
    monkeypatch.setattr(bnb.functional, "has_avx512bf16", lambda: False)
    with pytest.raises(pytest.skip.Exception, match="never repacks a CPU weight"):
        packed_weight_refused(64, 64)
    assert "no packed weight to refuse" in NO_REPACK
