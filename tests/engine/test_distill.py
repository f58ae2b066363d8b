from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from engine.config import preset
from engine.data import TokenData, tokenize_corpus
from engine.distill import DistillationRefused, distill, distillation_loss, weights_fingerprint
from engine.faults import FAULTS
from engine.quant import nf4_layers
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from engine.train import TrainConfig, pretrain

TEACHER = preset("tiny", intermediate_size=192)
STUDENT = preset("tiny", hidden_size=32, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64)
CFG = TrainConfig(steps=4, batch_size=4, seq_len=32, lr=5e-3, warmup_steps=1, eval_batches=1)


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return cached_tokenizer(512)


@pytest.fixture(scope="module")
def data(tok: EngineTokenizer) -> TokenData:
    return tokenize_corpus(tok)


@pytest.fixture(scope="module")
def teacher_path(tmp_path_factory: pytest.TempPathFactory, tok: EngineTokenizer, data: TokenData) -> Path:
    run = pretrain(
        tmp_path_factory.mktemp("teacher"),
        TrainConfig(steps=6, batch_size=4, seq_len=32, lr=5e-3, warmup_steps=1, eval_batches=1),
        config=TEACHER,
        tokenizer=tok,
        data=data,
    )
    assert run.checkpoint is not None
    return run.checkpoint / "model.safetensors"


def test_loss_is_kl_at_temperature_scaled_by_t_squared() -> None:
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(2, 6, 11, generator=gen)
    t = torch.randn(2, 6, 11, generator=gen)
    labels = torch.randint(0, 11, (2, 6), generator=gen)
    labels[0, 3] = -100
    temp = 3.0
    loss, kl, ce = distillation_loss(s, t, labels, temperature=temp, alpha=0.25)
    mask = labels[:, 1:] != -100
    ref_kl = (
        F.kl_div(
            F.log_softmax(s[:, :-1] / temp, -1), F.log_softmax(t[:, :-1] / temp, -1), log_target=True, reduction="none"
        )
        .sum(-1)[mask]
        .mean()
        * temp**2
    )
    ref_ce = F.cross_entropy(s[:, :-1].reshape(-1, 11), labels[:, 1:].reshape(-1), ignore_index=-100)
    assert kl == pytest.approx(float(ref_kl), rel=1e-5)
    assert ce == pytest.approx(float(ref_ce), rel=1e-5)
    assert loss == pytest.approx(0.25 * float(ref_kl) + 0.75 * float(ref_ce), rel=1e-5)
    same = distillation_loss(t, t, labels, temperature=temp, alpha=1.0)[1]
    assert float(same) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="temperature"):
        distillation_loss(s, t, labels, temperature=0.0, alpha=0.5)


def test_student_learns_from_frozen_teacher(tmp_path: Path, teacher_path: Path, data: TokenData) -> None:
    result = distill(teacher_path, tmp_path, CFG, student_config=STUDENT, data=data, temperature=2.0)
    assert result.losses[-1] < result.losses[0]
    teacher = result.extra["teacher"]
    assert not teacher.training
    assert all(not p.requires_grad and p.grad is None for p in teacher.parameters())
    from engine.checkpoint import load_checkpoint

    original = load_checkpoint(teacher_path).model
    assert weights_fingerprint(teacher) == weights_fingerprint(original)


def test_teacher_grads_on_fault_is_visible(tmp_path: Path, teacher_path: Path, data: TokenData) -> None:
    with FAULTS.enabled("teacher_grads_on"):
        result = distill(teacher_path, tmp_path, CFG, student_config=STUDENT, data=data)
    teacher = result.extra["teacher"]
    assert any(p.requires_grad for p in teacher.parameters())
    assert any(p.grad is not None for p in teacher.parameters())


def test_nf4_teacher_stays_nf4(tmp_path: Path, teacher_path: Path, data: TokenData) -> None:
    result = distill(teacher_path, tmp_path / "q", CFG, student_config=STUDENT, data=data, quantize_teacher=True)
    teacher: Any = result.extra["teacher"]
    assert len(list(nf4_layers(teacher))) == 7 * TEACHER.num_hidden_layers
    assert result.losses[-1] < result.losses[0]
    with FAULTS.enabled("teacher_dequantized"):
        bad = distill(teacher_path, tmp_path / "d", CFG, student_config=STUDENT, data=data, quantize_teacher=True)
    assert list(nf4_layers(bad.extra["teacher"])) == []


def test_identical_weights_are_refused_unless_allowed(tmp_path: Path, teacher_path: Path, data: TokenData) -> None:
    with pytest.raises(DistillationRefused, match="identical weights"):
        distill(teacher_path, tmp_path / "a", CFG, student_init=teacher_path, data=data)
    short = TrainConfig(**{**CFG.to_dict(), "steps": 1})
    allowed = distill(
        teacher_path, tmp_path / "b", short, student_init=teacher_path, data=data, allow_same=True, alpha=1.0
    )
    assert allowed.step0_loss == pytest.approx(0.0, abs=1e-5)  # KL of a model against itself
    with pytest.raises(DistillationRefused, match="vocab_size"):
        distill(teacher_path, tmp_path / "c", CFG, student_config=STUDENT.replace(vocab_size=600), data=data)


@pytest.mark.parametrize(("temperature", "alpha", "named"), [(0.0, 0.5, "temperature"), (2.0, 1.5, "alpha")])
def test_bad_loss_settings_are_refused_before_anything_is_written(
    tmp_path: Path, teacher_path: Path, data: TokenData, temperature: float, alpha: float, named: str
) -> None:
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=named):
        distill(teacher_path, out, CFG, student_config=preset("tiny"), temperature=temperature, alpha=alpha, data=data)
    assert not out.exists()
