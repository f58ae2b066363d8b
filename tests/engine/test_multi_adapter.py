from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.config import preset
from engine.data import InstructionData, InstructionPair, tokenize_pairs
from engine.faults import FAULTS
from engine.lora import LoraSettings, load_adapter
from engine.model import DecoderLM, build_model
from engine.multi_adapter import AdapterJob, train_adapters
from engine.quant import nf4_layers
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from engine.train import LOG_NAME, TrainConfig, read_log

CFG = TrainConfig(steps=3, batch_size=4, seq_len=48, lr=1e-2, warmup_steps=1, eval_batches=1)


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return cached_tokenizer(512)


def task_data(tok: EngineTokenizer, word: str) -> InstructionData:
    pairs = [InstructionPair(f"Give {word} {i}.", f"return '{word}' * {i}", f"m:{word}{i}") for i in range(24)]
    return tokenize_pairs(pairs, tok, seq_len=48)


def base() -> DecoderLM:
    torch.manual_seed(0)
    return build_model(preset("tiny", intermediate_size=192))


def jobs(tok: EngineTokenizer, tmp: Path, names: tuple[str, ...] = ("alpha", "beta")) -> list[AdapterJob]:
    return [AdapterJob(n, task_data(tok, n), tmp / n, LoraSettings(r=4)) for n in names]


def adapter_weights(model: torch.nn.Module, name: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if ".lora_" in n and f".{name}." in n}


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ("round_robin", ["alpha", "beta", "gamma"] * 3),
        ("synchronized", ["alpha", "beta", "gamma"] * 3),
    ],
)
def test_schedules_give_each_adapter_its_steps(
    tmp_path: Path, tok: EngineTokenizer, schedule: str, expected: list[str]
) -> None:
    result = train_adapters(base(), jobs(tok, tmp_path, ("alpha", "beta", "gamma")), CFG, schedule=schedule)  # type: ignore[arg-type]
    assert result.order == expected
    for name, state in result.adapters.items():
        assert state.step == 3 and len(state.losses) == 3
        assert state.checkpoint == tmp_path / name / "step-000003"
        assert [r["kind"] for r in read_log(tmp_path / name / LOG_NAME)].count("train") == 3


def test_lowest_val_first_finishes_the_best_adapter_first(tmp_path: Path, tok: EngineTokenizer) -> None:
    result = train_adapters(base(), jobs(tok, tmp_path), CFG, schedule="lowest_val_first")
    first = min(result.adapters.values(), key=lambda s: (s.val_losses[0], s.job.name)).job.name
    assert result.order[:3] == [first] * 3
    assert sorted(result.order) == sorted(["alpha", "beta"] * 3)


@pytest.mark.parametrize("quantize", [False, True], ids=["fp32-base", "nf4-base"])
def test_adapters_are_independent(tmp_path: Path, tok: EngineTokenizer, quantize: bool) -> None:
    result = train_adapters(base(), jobs(tok, tmp_path), CFG, schedule="round_robin", quantize=quantize)
    model = result.model
    if quantize:
        assert list(nf4_layers(model))
    a, b = adapter_weights(model, "alpha"), adapter_weights(model, "beta")
    for (na, ta), (nb, tb) in zip(sorted(a.items()), sorted(b.items()), strict=True):
        assert na.replace(".alpha.", ".beta.") == nb
        assert not torch.equal(ta, tb)
    pa = {p.data_ptr() for n, p in model.named_parameters() if ".alpha." in n}
    pb = {p.data_ptr() for n, p in model.named_parameters() if ".beta." in n}
    assert not pa & pb
    # each adapter's optimizer holds only its own parameters
    ids_a = {id(p) for p in result.adapters["alpha"].params}
    assert ids_a.isdisjoint(id(p) for p in result.adapters["beta"].params)
    # each saved adapter reproduces itself on a fresh base
    reloaded = load_adapter(base(), tmp_path / "beta" / "step-000003" / "adapter", "beta")
    assert torch.equal(
        adapter_weights(reloaded, "beta")[next(iter(adapter_weights(reloaded, "beta")))], b[next(iter(b))]
    )


def test_shared_state_fault_couples_adapters(tmp_path: Path, tok: EngineTokenizer) -> None:
    with FAULTS.enabled("adapter_shared_state"):
        result = train_adapters(base(), jobs(tok, tmp_path), CFG, schedule="round_robin")
    a, b = adapter_weights(result.model, "alpha"), adapter_weights(result.model, "beta")
    assert all(torch.equal(ta, tb) for ta, tb in zip(a.values(), b.values(), strict=True))


def test_bad_requests_are_refused(tmp_path: Path, tok: EngineTokenizer) -> None:
    with pytest.raises(ValueError, match="unique"):
        train_adapters(base(), jobs(tok, tmp_path, ("alpha", "alpha")), CFG)
    with pytest.raises(ValueError, match="unknown schedule"):
        train_adapters(base(), jobs(tok, tmp_path), CFG, schedule="random")  # type: ignore[arg-type]


def test_two_adapters_of_one_data_and_seed_are_one_adapter(tmp_path: Path, tok: EngineTokenizer) -> None:
    import json

    data = task_data(tok, "same")
    same = [AdapterJob(n, data, tmp_path / n, LoraSettings(r=4), {"kind": "finetune"}) for n in ("one", "two")]
    result = train_adapters(base(), same, CFG, schedule="round_robin")
    one, two = adapter_weights(result.model, "one"), adapter_weights(result.model, "two")
    assert all(torch.equal(a, b) for a, b in zip(one.values(), two.values(), strict=True))
    manifest = json.loads((tmp_path / "two" / "step-000003" / "manifest.json").read_text())
    assert manifest == {
        "kind": "finetune",
        "step": 3,
        "seed": CFG.seed,
        "train_config": CFG.to_dict(),
        "data_digest": data.digest,
    }
    records = read_log(tmp_path / "two" / LOG_NAME)
    assert records[0]["kind"] == "start" and records[0]["config"] == CFG.to_dict()
    assert all(isinstance(r["tokens"], int) and r["tokens"] > 0 for r in records if r["kind"] == "train")
    with FAULTS.enabled("multi_adapter_manifest_unrecorded"):
        train_adapters(base(), same[:1], CFG, schedule="round_robin")
    manifest = json.loads((tmp_path / "one" / "step-000003" / "manifest.json").read_text())
    assert manifest == {"kind": "finetune", "step": 3}


def test_a_nan_loss_stops_the_run_naming_the_adapter_and_its_last_checkpoint(
    tmp_path: Path, tok: EngineTokenizer
) -> None:
    from engine.train import NonFiniteLossError

    poisoned = base()
    with torch.no_grad():
        poisoned.model.norm.weight[0] = float("nan")
    with pytest.raises(NonFiniteLossError, match="adapter 'alpha' loss") as caught:
        train_adapters(poisoned, jobs(tok, tmp_path), CFG, schedule="round_robin")
    assert caught.value.last_checkpoint is None and "no checkpoint was written yet" in str(caught.value)
    stop = [r for r in read_log(tmp_path / "alpha" / LOG_NAME) if r["kind"] == "nonfinite"]
    assert stop == [{"kind": "nonfinite", "step": 0, "what": "loss", "value": "nan", "last_checkpoint": None}]
