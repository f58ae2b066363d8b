"""The falsifiers' own readers of what the engine prints and writes: each must tell a right output
from a wrong one, or the claim it serves cannot fail."""

from __future__ import annotations

from engine.memory import MemoryEstimate, memory_table
from falsifiers.qlora_memory.memory import _misaligned
from falsifiers.train_cli.run_log import _records_differing


def _table() -> list[str]:
    rows = [
        MemoryEstimate("LoRA, fp16 base", "lora", "fp16", 1 << 20, 4096, 16384, 16384, 32768),
        MemoryEstimate("QLoRA, NF4 base with a long label", "qlora", "nf4", 3 << 30, 4096, 16384, 16384, 32768),
    ]
    return memory_table(rows, measured={"LoRA, fp16 base": 1023}).splitlines()


def test_an_aligned_table_has_no_misaligned_line() -> None:
    assert _misaligned(_table()) == 0


def test_a_shifted_cell_a_narrow_column_and_a_missing_separator_are_counted() -> None:
    lines = _table()
    shifted = [*lines[:2], " " + lines[2], *lines[3:]]
    assert _misaligned(shifted) == 1
    first = len(lines[1].split("  ")[0])  # the first column, one space wider than its widest cell
    wider = [line[:first] + ("-" if n == 1 else " ") + line[first:] for n, line in enumerate(lines)]
    assert _misaligned(wider) == 1
    no_separator = [lines[0], lines[0], *lines[2:]]
    assert _misaligned(no_separator) == len(no_separator)


def test_records_differing_reads_known_fields_and_the_presence_of_the_rest() -> None:
    want = [{"kind": "train", "step": 0, "loss": ...}, {"kind": "checkpoint", "step": 2, "path": "run/step-000002"}]
    same = [{"kind": "train", "step": 0, "loss": 6.2}, {"kind": "checkpoint", "step": 2, "path": "run/step-000002"}]
    assert _records_differing(same, want) == 0
    assert _records_differing([{**same[0], "step": 1}, same[1]], want) == 1  # a known value differs
    assert _records_differing([{"kind": "train", "step": 0}, same[1]], want) == 1  # a field is missing
    assert _records_differing([{**same[0], "extra": 1}, same[1]], want) == 1  # a field too many
    assert _records_differing(same[:1], want) == 1  # a record missing
