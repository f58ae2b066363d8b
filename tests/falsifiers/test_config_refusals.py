"""FALSIFY-CKPT-016 names each architecture refusal gone or reworded, and each field read otherwise."""

from __future__ import annotations

import pytest

from engine.config import ModelConfig
from engine.faults import FAULTS
from falsifiers.checkpoint_self_contained.config_refusals import config_read_or_refused


def test_the_engine_refuses_every_impossible_architecture_and_reads_the_rest() -> None:
    assert config_read_or_refused() == {"refusals": 16, "refusals_differing": [], "reads": 20, "reads_differing": []}


def test_an_odd_head_dim_accepted_is_named_at_every_door() -> None:
    with FAULTS.enabled("config_odd_head_dim_accepted"):
        out = config_read_or_refused()
    assert out["refusals_differing"] == [
        *["not refused: 'head_dim 3 must be even for rotary embeddings'"] * 3,
        *["not refused: 'head_dim 9 must be even for rotary embeddings'"] * 3,
    ]
    assert out["reads_differing"] == []


def test_an_eos_list_kept_as_a_list_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def as_given(cls: type[ModelConfig], data: dict[str, object]) -> ModelConfig:
        return cls(**data)  # type: ignore[arg-type]

    monkeypatch.setattr(ModelConfig, "from_dict", classmethod(as_given))
    out = config_read_or_refused()
    [unknown] = out["refusals_differing"]
    assert unknown.startswith("TypeError: ")
    assert unknown.endswith(" instead of the refusal 'unknown config keys: model_type, rope_scaling'")
    named = [line.split(": TypeError: ")[0] for line in out["reads_differing"]]
    assert named == [
        "from_dict of {'num_key_value_heads': 4, 'bos_token_id': 0, 'eos_token_id': (1, 5), 'pad_token_id': 2}",
        "eos_token_id [5]",
        "eos_token_id [5, 7]",
    ]
