"""Integers in a contract fit 64 bits, however they are written: a decimal past Python's 4,300-digit
conversion limit is refused like any other out-of-range integer (PV100), never handed on as text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pv.loader import load_contract_file

CONTRACT = """\
metadata:
  id: big-v1
  version: 1.0.0
  description: d
  references: [r]
falsification_tests:
  - id: FALSIFY-BIG-001
    prediction: p
    check: falsifiers.demo:loss
    params: {{x: {value}}}
    expect: "x > 0"
"""


@pytest.mark.parametrize(
    "value",
    [
        "9" * 4301,
        "-" + "9" * 5000,
        "1" + "0" * 20_000,
        "9223372036854775808",  # 2**63: one past the bound
        "0x" + "f" * 17,
        "0o" + "7" * 22,
        "!!int " + "9" * 4301,
        "[1, " + "9" * 4301 + "]",
    ],
    ids=["4301-digits", "negative-5000", "20001-digits", "2**63", "hex", "octal", "tagged", "in-a-list"],
)
def test_an_integer_past_64_bits_is_pv100(tmp_path: Path, value: str) -> None:
    path = tmp_path / "big-v1.yaml"
    path.write_text(CONTRACT.format(value=value), encoding="utf-8")
    loaded = load_contract_file(path)
    assert loaded.contract is None
    codes = [d.code for d in loaded.diagnostics]
    assert codes == ["PV100"], loaded.diagnostics
    assert "out of range" in loaded.diagnostics[0].message and loaded.diagnostics[0].line == 10


def test_the_largest_64_bit_integers_load(tmp_path: Path) -> None:
    path = tmp_path / "big-v1.yaml"
    path.write_text(CONTRACT.format(value=str(2**63 - 1)), encoding="utf-8")
    loaded = load_contract_file(path)
    assert loaded.contract is not None
    assert loaded.contract.falsification_tests[0].params == {"x": 2**63 - 1}


def test_pv_validate_exits_1_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "big-v1.yaml"
    path.write_text(CONTRACT.format(value="9" * 4301), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", "from pv.cli import main; main()", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "PV100" in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
