from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.checkpoint import load_checkpoint
from engine.config import preset
from engine.data import InstructionData, TokenData, extract_instruction_pairs, tokenize_corpus, tokenize_pairs
from engine.faults import FAULTS
from engine.lora import LoraSettings
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from engine.train import (
    LATEST_NAME,
    LOG_NAME,
    IncompatibleInitError,
    NonFiniteLossError,
    ResumeError,
    TrainConfig,
    finetune,
    latest_checkpoint,
    lr_factor,
    nan_fault_step,
    pretrain,
    read_log,
)

TINY = preset("tiny", intermediate_size=192)
CFG = TrainConfig(steps=6, batch_size=4, seq_len=32, lr=5e-3, warmup_steps=2, save_every=3, eval_batches=2)


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return cached_tokenizer(512)


@pytest.fixture(scope="module")
def data(tok: EngineTokenizer) -> TokenData:
    return tokenize_corpus(tok)


@pytest.fixture(scope="module")
def inst(tok: EngineTokenizer) -> InstructionData:
    return tokenize_pairs(extract_instruction_pairs(max_pairs=120), tok, seq_len=64)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, tok: EngineTokenizer, data: TokenData) -> Any:
    out = tmp_path_factory.mktemp("base")
    return pretrain(out, CFG, config=TINY, tokenizer=tok, data=data)


def test_schedule_warms_up_then_decays() -> None:
    cfg = TrainConfig(steps=20, warmup_steps=4, lr=1.0, min_lr_ratio=0.1)
    f = [lr_factor(s, cfg) for s in range(20)]
    assert f[:4] == [0.25, 0.5, 0.75, 1.0]
    assert all(a >= b for a, b in itertools.pairwise(f[4:]))
    assert f[4] == pytest.approx(1.0) and f[-1] > 0.1
    assert lr_factor(20, cfg) == pytest.approx(0.1)


def test_pretraining_learns_and_logs(base_run: Any, tok: EngineTokenizer) -> None:
    out: Path = base_run.out_dir
    records = read_log(out / LOG_NAME)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "start" and kinds[1] == "step0"
    step0 = records[1]["loss"]
    assert abs(step0 - math.log(TINY.vocab_size)) < 0.3  # random init: close to uniform
    assert [r["step"] for r in records if r["kind"] == "train"] == list(range(6))
    vals = [r for r in records if r["kind"] == "val"]
    assert vals[-1]["step"] == 6 and vals[-1]["val_loss"] < step0 - 0.2
    assert base_run.losses[-1] < base_run.losses[0]
    assert [r["step"] for r in records if r["kind"] == "checkpoint"] == [3, 6]
    loaded = load_checkpoint(base_run.checkpoint / "model.safetensors")
    assert loaded.manifest["step"] == 6 and loaded.manifest["kind"] == "pretrain"
    assert loaded.tokenizer == tok


def test_resume_continues_the_same_trajectory(
    tmp_path: Path, base_run: Any, tok: EngineTokenizer, data: TokenData
) -> None:
    run = tmp_path / "resumed"
    shutil.copytree(base_run.out_dir, run)
    shutil.rmtree(run / "step-000006")
    (run / LATEST_NAME).write_text(json.dumps({"folder": "step-000003", "step": 3}))
    resumed = pretrain(run, CFG, config=TINY, tokenizer=tok, data=data, resume=True)
    assert resumed.start_step == 3
    assert resumed.losses == base_run.losses[3:]  # bit for bit
    assert resumed.val_losses == base_run.val_losses
    with pytest.raises(ResumeError, match="lr"):
        pretrain(run, TrainConfig(**{**CFG.to_dict(), "lr": 1e-3}), config=TINY, tokenizer=tok, data=data, resume=True)
    with pytest.raises(ResumeError, match="no complete checkpoint"):
        pretrain(tmp_path / "empty", CFG, config=TINY, tokenizer=tok, data=data, resume=True)


def test_nan_guard_stops_and_keeps_last_good_checkpoint(tmp_path: Path, tok: EngineTokenizer, data: TokenData) -> None:
    cfg = TrainConfig(**{**CFG.to_dict(), "save_every": 2})
    assert nan_fault_step(cfg) == 3
    with FAULTS.enabled("nan_in_step"), pytest.raises(NonFiniteLossError, match="step 3: the loss is nan") as info:
        pretrain(tmp_path, cfg, config=TINY, tokenizer=tok, data=data)
    assert info.value.last_checkpoint == tmp_path / "step-000002"
    assert latest_checkpoint(tmp_path) == tmp_path / "step-000002"
    assert not (tmp_path / "step-000004").exists()
    records = read_log(tmp_path / LOG_NAME)
    assert records[-1]["kind"] == "nonfinite" and records[-1]["step"] == 3
    kept = load_checkpoint(tmp_path / "step-000002" / "model.safetensors")  # refuses NaN weights
    assert all(torch.isfinite(p).all() for p in kept.model.parameters())


def test_init_checkpoint_is_loaded_and_checked(
    tmp_path: Path, base_run: Any, tok: EngineTokenizer, data: TokenData
) -> None:
    init = base_run.checkpoint / "model.safetensors"
    short = TrainConfig(steps=1, batch_size=4, seq_len=32, warmup_steps=0, eval_batches=1)
    warm = pretrain(tmp_path / "warm", short, init=init, data=data)
    assert warm.step0_loss < base_run.step0_loss - 0.2
    with FAULTS.enabled("init_checkpoint_ignored"):
        cold = pretrain(tmp_path / "cold", short, init=init, data=data)
    assert abs(cold.step0_loss - base_run.step0_loss) < 0.1
    wider = TINY.replace(hidden_size=128, num_attention_heads=8)
    with pytest.raises(IncompatibleInitError, match="hidden_size: 64 != 128; num_attention_heads: 4 != 8"):
        pretrain(tmp_path / "bad", short, config=wider, init=init, data=data)


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_finetune_methods(tmp_path: Path, base_run: Any, inst: InstructionData, method: str) -> None:
    cfg = TrainConfig(steps=4, batch_size=4, seq_len=64, lr=1e-2, warmup_steps=1, eval_batches=2, save_every=2)
    base = base_run.checkpoint / "model.safetensors"
    result = finetune(base, tmp_path, cfg, method=method, lora=LoraSettings(r=4), data=inst)
    assert result.losses[-1] < result.losses[0]
    folder = result.checkpoint
    assert folder is not None
    if method == "full":
        assert load_checkpoint(folder / "model.safetensors").manifest["method"] == "full"
    else:
        assert sorted(p.name for p in (folder / "adapter").iterdir()) == [
            "adapter_config.json",
            "adapter_model.safetensors",
        ]
        assert json.loads((folder / "manifest.json").read_text())["base"] == str(base)
        # the frozen base is still bit for bit the checkpoint's
        model = result.extra["model"]
        original = load_checkpoint(base).model.state_dict()
        if method == "lora":
            for name, value in model.base_model.model.state_dict().items():
                key = name.replace(".base_layer", "")
                if "lora_" not in name:
                    assert torch.equal(value, original[key]), name


def test_lora_finetune_resumes_exactly(tmp_path: Path, base_run: Any, inst: InstructionData) -> None:
    cfg = TrainConfig(steps=4, batch_size=4, seq_len=64, lr=1e-2, warmup_steps=1, eval_batches=1, save_every=2)
    base = base_run.checkpoint / "model.safetensors"
    full = finetune(base, tmp_path / "a", cfg, method="qlora", lora=LoraSettings(r=4, dropout=0.1), data=inst)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    (tmp_path / "b" / LATEST_NAME).write_text(json.dumps({"folder": "step-000002", "step": 2}))
    again = finetune(
        base, tmp_path / "b", cfg, method="qlora", lora=LoraSettings(r=4, dropout=0.1), data=inst, resume=True
    )
    assert again.losses == full.losses[2:]


def test_gpu_generator_states_are_restored_by_gpu_index_as_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.train.state import state_from_files, state_to_files

    param = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.AdamW([param])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    tensors, meta = state_to_files(opt, sched, ["w"])
    # a run saved on 12 GPUs: rng.cuda.10 sorts before rng.cuda.2 as text
    tensors |= {f"rng.cuda.{i}": torch.full((4,), i, dtype=torch.uint8) for i in range(12)}
    restored: list[list[int]] = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 12)
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda states: restored.append([int(s[0]) for s in states]))
    state_from_files(opt, sched, ["w"], tensors, meta)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)  # resumed on fewer GPUs: the first three
    state_from_files(opt, sched, ["w"], tensors, meta)
    assert restored == [list(range(12)), [0, 1, 2]]
