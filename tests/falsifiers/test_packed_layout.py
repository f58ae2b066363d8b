"""FALSIFY-NF4-006 packs with bitsandbytes' own converter, and skips where that library has none."""

from __future__ import annotations

import pytest

from contracts.conftest import make_tiny_model
from engine.faults import FAULTS
from falsifiers.nf4_quantization.packed_layout import packed_layout_refused


def test_a_library_without_the_packed_layout_is_a_skip_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    bnb = pytest.importorskip("bitsandbytes")
    monkeypatch.delattr(bnb.functional, "_convert_weight_packed_for_cpu", raising=False)
    with pytest.raises(pytest.skip.Exception, match="has no CPU-packed layout"):
        packed_layout_refused(make_tiny_model)


def test_a_guard_that_lets_packed_bytes_through_is_named_on_each_path() -> None:
    pytest.importorskip("bitsandbytes")
    with FAULTS.enabled("nf4_packed_layout_unguarded"):
        out = packed_layout_refused(make_tiny_model)
    assert out["packed"] == 3
    assert len(out["refusals_differing"]) == 3
    assert all(d.startswith("not refused: ") for d in out["refusals_differing"])
