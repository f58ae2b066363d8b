"""FALSIFY-NF4-008 names each bitsandbytes warning the engine's import hides beyond its CPU-kernel one."""

from __future__ import annotations

from pathlib import Path

from engine.faults import FAULTS
from engine.quant import import_bnb
from falsifiers.nf4_quantization.bnb_import_quiet import import_hides_one_warning

KEPT = ["bitsandbytes.cextension:WARNING", "bitsandbytes.backends.cpu.ops:ERROR"]


def test_only_the_cpu_kernel_warning_is_hidden_and_the_levels_are_put_back(tmp_path: Path) -> None:
    assert import_hides_one_warning(tmp_path) == {
        "real_cpu_warnings": [],
        "real_returned": True,
        "stand_in_records": KEPT,
        "stand_in_levels_after": ["WARNING", "INFO"],
        "stand_in_returned": True,
        "broken_raised": "ImportError",
        "broken_levels_after": ["WARNING", "INFO"],
        "child_exits": [0, 0, 0],
    }


def test_a_silenced_root_logger_loses_the_other_warning(tmp_path: Path) -> None:
    with FAULTS.enabled("bnb_import_silences_all"):
        out = import_hides_one_warning(tmp_path)
    # the cextension warning never reached the user, and the CPU logger, at the user's INFO, let
    # through the one warning that was to be hidden, from the real bitsandbytes too where it logs
    # it (bitsandbytes tries the optional kernel only on a CPU with AVX512-BF16)
    assert out["stand_in_records"] == ["bitsandbytes.backends.cpu.ops:WARNING", "bitsandbytes.backends.cpu.ops:ERROR"]
    real = ["WARNING"] if import_bnb().functional.has_avx512bf16() else []
    assert [r.split(":", 1)[1] for r in out["real_cpu_warnings"]] == real
    assert out["stand_in_levels_after"] == ["WARNING", "INFO"]
    assert out["child_exits"] == [0, 0, 0]
