"""`requires: [cpu_flag:NAME]`: parsing, reading /proc/cpuinfo, and the skip reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

import pv.requirements
from pv.requirements import Machine, RequirementError, needs_gpu, parse_requirement, read_cpu_flags, unmet

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16
bugs\t\t: spectre_v1

processor\t: 1
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16
"""


def test_parse_cpu_flag() -> None:
    req = parse_requirement("cpu_flag:avx512_bf16")
    assert (req.kind, req.value, req.needs_gpu) == ("cpu_flag", "avx512_bf16", False)
    assert not needs_gpu(["cpu_flag:avx512_bf16"])


@pytest.mark.parametrize("text", ["cpu_flag:", "cpu_flag:AVX512", "cpu_flag:avx 512", "cpu_flags:avx2"])
def test_malformed_cpu_flag_is_rejected(text: str) -> None:
    with pytest.raises(RequirementError, match=r"cpu_flag:NAME"):
        parse_requirement(text)


def test_read_cpu_flags_takes_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(CPUINFO)
    assert read_cpu_flags(info) == frozenset({"fpu", "sse2", "avx2", "avx512f", "avx512_bf16"})


def test_read_cpu_flags_unknown_without_file_or_flags_line(tmp_path: Path) -> None:
    assert read_cpu_flags(tmp_path / "missing") is None
    arm = tmp_path / "cpuinfo"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd\n")  # ARM names them Features
    assert read_cpu_flags(arm) is None


@pytest.mark.parametrize(
    ("flags", "reasons"),
    [
        (frozenset({"avx2", "avx512_bf16"}), []),
        (frozenset({"avx2"}), ["CPU lacks flag avx512_bf16"]),
        (None, ["needs CPU flag avx512_bf16: CPU flags are unknown on this machine (no flags in /proc/cpuinfo)"]),
    ],
)
def test_unmet_cpu_flag(monkeypatch: pytest.MonkeyPatch, flags: frozenset[str] | None, reasons: list[str]) -> None:
    monkeypatch.setattr(pv.requirements, "current_cpu_flags", lambda: flags)
    assert unmet(["cpu_flag:avx512_bf16"], Machine()) == reasons


def test_cpu_flag_never_probes_for_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> Machine:
        raise AssertionError("probed")

    monkeypatch.setattr(pv.requirements, "current_machine", boom)
    monkeypatch.setattr(pv.requirements, "current_cpu_flags", lambda: frozenset({"sse2"}))
    assert unmet(["cpu", "cpu_flag:sse2"]) == []
