"""FALSIFY-LORA-017 names each LoRA setting refused otherwise, and each setting PEFT is given otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.lora
from engine.faults import FAULTS
from falsifiers.lora_trains_base_frozen.lora_settings import lora_settings_kept_or_refused


def test_the_engine_refuses_each_bad_setting_and_keeps_the_edges(tmp_path: Path) -> None:
    out = lora_settings_kept_or_refused(tmp_path)
    assert out == {
        "refusals": 7,
        "refusals_differing": [],
        "commands": 7,
        "commands_differing": [],
        "kept": 3,
        "kept_differing": [],
    }


def test_alpha_collapsed_to_the_rank_is_named(tmp_path: Path) -> None:
    with FAULTS.enabled("lora_scaling_ignored"):
        out = lora_settings_kept_or_refused(tmp_path)
    assert out["kept_differing"] == [
        "{'r': 2, 'alpha': 0.5, 'dropout': 0.999, 'targets': ('q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj',"
        " 'up_proj', 'down_proj')}: peft_config alpha 2.0 != 0.5",
        "{'r': 16, 'alpha': 32.0, 'dropout': 0.1, 'targets': ('v_proj', 'q_proj')}: peft_config alpha 16.0 != 32.0",
    ]
    assert (out["refusals_differing"], out["commands_differing"]) == ([], [])


def test_a_dropout_of_one_accepted_is_named_at_both_doors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = engine.lora.LoraSettings.__post_init__

    def lenient(self: engine.lora.LoraSettings) -> None:
        if self.dropout != 1.0:
            checked(self)

    monkeypatch.setattr(engine.lora.LoraSettings, "__post_init__", lenient)
    out = lora_settings_kept_or_refused(tmp_path)
    assert out["refusals_differing"] == ["not refused: 'LoRA dropout must be in [0, 1), got 1.0'"]
    [command] = out["commands_differing"]
    assert command.startswith("finetune ") and " --dropout 1.0: exit " in command
    assert out["kept_differing"] == []
