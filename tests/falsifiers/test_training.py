"""The training checkers' shared helpers, without training anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.data import InstructionData
from falsifiers.shared.training import (
    Run,
    base_state,
    changed_tensors,
    instruction_subset,
    strip_peft_name,
    unique_bytes,
    window_mean,
    write_loss_evidence,
)
from falsifiers.shared.workdir import fresh_dir


def test_changed_tensors_compares_bits_not_values() -> None:
    nan = torch.tensor([float("nan"), 1.0])
    before = {"a": nan.clone(), "b": torch.tensor([0.0]), "c": torch.ones(2), "only_before": torch.zeros(1)}
    after = {
        "a": nan.clone(),
        "b": torch.tensor([-0.0]),
        "c": torch.ones(2, dtype=torch.float64),
        "only_after": torch.zeros(1),
    }
    # NaN == NaN bitwise; -0.0 differs from 0.0 in its sign bit; a dtype change is a change.
    assert changed_tensors(before, after) == ["b", "c"]


def test_changed_tensors_handles_non_contiguous_views() -> None:
    t = torch.arange(12.0).reshape(3, 4)
    assert changed_tensors({"t": t.t()}, {"t": t.t().clone()}) == []
    moved = t.t().clone()
    moved[0, 1] += 1e-3
    assert changed_tensors({"t": t.t()}, {"t": moved}) == ["t"]


def test_unique_bytes_counts_shared_storage_once() -> None:
    a = torch.zeros(10)  # 40 bytes
    b = torch.zeros(4, dtype=torch.float16)  # 8 bytes
    assert unique_bytes([a, a[2:5], a.view(2, 5), b]) == 48
    assert unique_bytes([]) == 0


def test_window_mean() -> None:
    values = [4.0, 3.0, 2.0, 1.0]
    assert window_mean(values, 2, last=False) == 3.5
    assert window_mean(values, 2, last=True) == 1.5
    assert window_mean(values, 10, last=True) == 2.5
    assert window_mean([], 3, last=True) != window_mean([], 3, last=True)  # NaN for an empty run


def test_strip_peft_name_and_base_state() -> None:
    assert strip_peft_name("base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight") == (
        "model.layers.0.self_attn.q_proj.weight"
    )
    assert strip_peft_name("lm_head.weight") == "lm_head.weight"
    linear = nn.Linear(2, 2)
    model = nn.Sequential(linear)
    model.register_buffer("lora_A_like", torch.zeros(1))  # "lora_" names are adapter state, left out
    state = base_state(model)
    assert sorted(state) == ["0.bias", "0.weight"]
    with torch.no_grad():
        linear.weight.add_(1.0)
    assert changed_tensors(state, base_state(model)) == ["0.weight"]  # a copy, not a view


def _data(rows: int) -> InstructionData:
    ids = torch.arange(rows * 3).reshape(rows, 3)
    return InstructionData(ids, ids.clone(), ids[:1], ids[:1].clone(), "d")


def test_instruction_subset_keeps_validation_and_checks_bounds() -> None:
    sub = instruction_subset(_data(5), 2)
    assert sub.input_ids.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert sub.val_input_ids.tolist() == [[0, 1, 2]]
    assert sub.digest == "d[:2]"
    for bad in (0, 6):
        with pytest.raises(ValueError, match="rows must be in"):
            instruction_subset(_data(5), bad)


def test_run_reads_the_loop_records() -> None:
    records = [
        {"kind": "start", "step": 0},
        {"kind": "step0", "step": 0, "loss": 5.0},
        {"kind": "train", "step": 0, "loss": 5.0},
        {"kind": "train", "step": 1, "loss": 4.0},
        {"kind": "nonfinite", "step": 2, "what": "loss", "value": "nan"},
    ]
    run = Run(None, records)
    assert (run.step0_loss, run.losses, run.nonfinite_steps, run.model) == (5.0, [5.0, 4.0], 1, None)
    assert Run(None, []).step0_loss != Run(None, []).step0_loss


def test_fresh_dir_never_repeats(tmp_path: Path) -> None:
    a, b = fresh_dir(tmp_path), fresh_dir(tmp_path)
    assert a != b and a.is_dir() and b.is_dir() and not any(a.iterdir())


def test_write_loss_evidence_writes_records_and_a_plot(tmp_path: Path) -> None:
    log_dir = tmp_path / "run"
    log_dir.mkdir()
    (log_dir / "log.jsonl").write_text('{"kind": "start"}\n')
    records = [{"kind": "train", "step": 0, "loss": 2.0}, {"kind": "train", "step": 1, "loss": 1.0}]
    out = tmp_path / "artifacts"
    write_loss_evidence(out, {"lora": Run(None, records)}, "title", log_dirs={"lora": log_dir})
    assert [json.loads(line) for line in (out / "lora.jsonl").read_text().splitlines()] == records
    assert (out / "lora-log.jsonl").read_text() == '{"kind": "start"}\n'
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    write_loss_evidence(None, {"lora": Run(None, records)}, "title")  # no artifacts folder: nothing to do
