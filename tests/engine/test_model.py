"""engine.model: the RoPE tables are the model's own buffers, never its checkpoint's."""

from __future__ import annotations

import pytest
import torch

from engine.config import preset
from engine.faults import FAULTS
from engine.model import build_model, evaluating, rope_cos_sin
from tests.engine.core_helpers import tiny_config


def test_rope_tables_are_non_persistent_buffers_built_on_demand() -> None:
    model = build_model(tiny_config())
    assert not any("rotary" in k for k in model.state_dict())  # a checkpoint holds weights only
    assert {n for n, _ in model.named_buffers()} == {"rotary.cos", "rotary.sin_folded"}
    assert model.rotary.cos.shape[0] == 0  # nothing built before a forward
    model(torch.tensor([[1, 2, 3]]))
    cos, sin_folded = model.rotary.cos, model.rotary.sin_folded
    head_dim = model.config.head_dim
    want_cos, want_sin = rope_cos_sin(torch.arange(cos.shape[0])[None], head_dim, model.config.rope_theta, cos.dtype)
    assert torch.equal(cos, want_cos[0, 0])
    half = head_dim // 2
    assert torch.equal(sin_folded, torch.cat((-want_sin[0, 0, :, :half], want_sin[0, 0, :, half:]), dim=-1))


def test_a_move_drops_the_tables_and_the_next_forward_rebuilds_them_in_its_dtype() -> None:
    model = build_model(tiny_config())
    model(torch.tensor([[1, 2, 3]]))
    assert model.rotary.cos.shape[0] >= 64
    model.to(torch.bfloat16)
    assert model.rotary.cos.shape[0] == 0
    model(torch.tensor([[1, 2, 3]]))
    assert model.rotary.cos.dtype == torch.bfloat16
    meta = build_model(tiny_config(), device="meta")
    meta.to_empty(device="cpu")  # a model built on meta moves without table data to copy


def test_two_models_with_different_theta_keep_their_own_tables() -> None:
    a = build_model(tiny_config(rope_theta=10000.0))
    b = build_model(tiny_config(rope_theta=500000.0))
    ids = torch.tensor([[5, 6, 7, 8]])
    a(ids), b(ids)
    assert not torch.equal(a.rotary.cos[:8], b.rotary.cos[:8])
    table = b.rotary.cos.clone()
    with FAULTS.enabled("rope_theta_ignored"):  # the fault rebuilds b's tables at theta 10000
        b(ids)
        assert torch.equal(b.rotary.cos[:8], a.rotary.cos[:8])
    b(ids)
    assert torch.equal(b.rotary.cos[: len(table)], table)  # and the next clean forward puts them back


def test_tables_are_built_where_the_activations_are() -> None:
    """``build_model`` casts the model after building it, and a cast starts the tables afresh on
    the default device; the next forward must build them where its activations are (the model's
    device: meta here, CUDA on a GPU), not where the empty table was left."""
    meta = build_model(tiny_config(), device="meta")
    out = meta(torch.tensor([[1, 2, 3]], device="meta"))
    assert out.logits.device.type == "meta" and tuple(out.logits.shape) == (1, 3, meta.config.vocab_size)
    assert meta.rotary.cos.device.type == "meta"


def test_evaluating_restores_every_modules_flag_even_when_the_block_raises() -> None:
    model = build_model(preset("tiny"))
    model.train()
    model.model.layers[0].mlp.eval()  # a caller's own choice
    before = [m.training for m in model.modules()]
    with pytest.raises(RuntimeError, match="inside"), evaluating(model):
        assert not any(m.training for m in model.modules())
        raise RuntimeError("inside")
    assert [m.training for m in model.modules()] == before
