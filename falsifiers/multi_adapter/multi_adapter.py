"""Several adapters on one base: memory grows by adapters only, adapters are independent, and each
adapter's checkpoint reloads to the outputs it had.

Every checker builds its adapters through ``engine.multi_adapter`` on a base loaded from the
session's pretrained init, inside its own call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.data import InstructionData
from engine.lora import LoraSettings, load_adapter, swap_adapter
from engine.multi_adapter import AdapterJob, build_multi_adapter_model, train_adapters
from engine.train import TrainConfig, make_optimizer
from falsifiers.shared.training import changed_tensors, module_tensors, unique_bytes
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SEQ_LEN = 64
BATCH = 8
EVAL_ROWS = 4


def _jobs(n_adapters: int, rank: int, data: InstructionData, out: Path) -> list[AdapterJob]:
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    return [AdapterJob(f"a{i}", data, out / f"a{i}", settings) for i in range(n_adapters)]


def _base(pretrained_init: Path) -> nn.Module:
    return load_checkpoint(pretrained_init, device="cpu").model


def _adapter_state(model: nn.Module, name: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if ".lora_" in n and f".{name}." in n}


@checker(observes=["total_bytes", "base_bytes", "adapter_bytes"], ids=["FALSIFY-MULTI-001"])
def memory_bound(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, n_adapters: int, rank: int
) -> dict[str, Any]:
    """Distinct storage bytes of every parameter and buffer: the bare base, one adapter's LoRA
    matrices, and the model holding ``n_adapters`` adapters on that base."""
    base = _base(pretrained_init)
    base_bytes = unique_bytes(module_tensors(base))
    model = build_multi_adapter_model(base, _jobs(n_adapters, rank, instruction_data, fresh_dir(tmp_path)))
    adapter = [p.data for n, p in model.named_parameters() if ".lora_" in n and ".a0." in n]
    return {
        "total_bytes": unique_bytes(module_tensors(model)),
        "base_bytes": base_bytes,
        "adapter_bytes": unique_bytes(adapter),
    }


@checker(observes=["trained_adapter_changed", "other_adapters_changed"], ids=["FALSIFY-MULTI-002"])
def independence(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    n_adapters: int,
    rank: int,
    steps: int,
    lr: float,
    seed: int = 0,
) -> dict[str, Any]:
    """Train adapter ``a0`` alone for ``steps`` AdamW steps (the others inactive and frozen, as the
    engine's scheduler leaves them on another adapter's turn), then compare every adapter bitwise."""
    model: Any = build_multi_adapter_model(
        _base(pretrained_init), _jobs(n_adapters, rank, instruction_data, fresh_dir(tmp_path)), seed=seed
    )
    names = [f"a{i}" for i in range(n_adapters)]
    before = {name: _adapter_state(model, name) for name in names}
    swap_adapter(model, "a0")
    for n, p in model.named_parameters():
        p.requires_grad_(".lora_" in n and ".a0." in n)
    optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad], TrainConfig(lr=lr, seed=seed))
    model.train()
    for step in range(steps):
        ids, labels = instruction_data.batch(step, BATCH, seed)
        optimizer.zero_grad(set_to_none=True)
        model(ids, labels=labels).loss.backward()
        optimizer.step()
    after = {name: _adapter_state(model, name) for name in names}
    changed = {name: bool(changed_tensors(before[name], after[name])) for name in names}
    return {
        "trained_adapter_changed": int(changed["a0"]),
        "other_adapters_changed": sum(int(changed[n]) for n in names[1:]),
    }


def _logits(model: Any, ids: torch.Tensor) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model(ids).logits.float()


@checker(observes=["max_abs_logit_diff", "adapters_checked", "order"], ids=["FALSIFY-MULTI-003"])
def checkpoint_reload(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    n_adapters: int,
    rank: int,
    steps: int,
    lr: float,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ``n_adapters`` adapters round-robin with ``engine.multi_adapter.train_adapters``, record
    each one's logits, then load every adapter's final checkpoint onto a freshly loaded base (all
    on one model, under their own names) and compare."""
    jobs = _jobs(n_adapters, rank, instruction_data, fresh_dir(tmp_path))
    cfg = TrainConfig(
        steps=steps, batch_size=BATCH, seq_len=SEQ_LEN, lr=lr, warmup_steps=min(2, steps), eval_batches=1, seed=seed
    )
    result = train_adapters(_base(pretrained_init), jobs, cfg, schedule="round_robin")
    ids = instruction_data.val_input_ids[:EVAL_ROWS]
    expected = {}
    for job in jobs:
        swap_adapter(result.model, job.name)
        expected[job.name] = _logits(result.model, ids)
    reloaded: Any = _base(pretrained_init)
    for job in jobs:
        checkpoint = result.adapters[job.name].checkpoint
        if checkpoint is None:
            raise RuntimeError(f"adapter {job.name} wrote no checkpoint")
        reloaded = load_adapter(reloaded, checkpoint / "adapter", job.name)
    diffs = []
    for job in jobs:
        swap_adapter(reloaded, job.name)
        diffs.append(float((_logits(reloaded, ids) - expected[job.name]).abs().max()))
    return {
        "max_abs_logit_diff": max(diffs, default=float("nan")),
        "adapters_checked": len(diffs),
        "order": result.order,  # the adapter each step trained, in order
    }


@checker(
    observes=[
        "adapters",
        "tensors_differing_same_seed",
        "step0_losses_differing",
        "tensors_differing_other_seed",
        "defaults",
    ],
    ids=["FALSIFY-MULTI-004"],
)
def seeds_pin_adapters(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    n_adapters: int,
    rank: int,
    steps: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ``n_adapters`` adapters on one base twice with the same seed, drawing from the global RNG
    in between, then once with the next seed: the same seed gives every adapter the same weights and
    step-0 loss, bit for bit; another seed gives other weights (so the comparison can fail)."""
    cfg = TrainConfig(steps=steps, batch_size=BATCH, seq_len=SEQ_LEN, lr=1e-3, warmup_steps=1, seed=seed)

    def run(run_seed: int, tag: str) -> tuple[dict[str, dict[str, torch.Tensor]], dict[str, float]]:
        torch.manual_seed(10_000 + len(tag))  # state outside the run's config must not matter
        torch.rand(97)
        result = train_adapters(
            _base(pretrained_init),
            _jobs(n_adapters, rank, instruction_data, fresh_dir(tmp_path, f"seeds-{tag}-")),
            TrainConfig(**{**cfg.to_dict(), "seed": run_seed}),
        )
        names = [f"a{i}" for i in range(n_adapters)]
        return {n: _adapter_state(result.model, n) for n in names}, {n: result.adapters[n].losses[0] for n in names}

    # build_multi_adapter_model's defaults on a bf16 base: not quantized, seed 0, and only the
    # adapters' weights in fp32
    from bitsandbytes.nn import Linear4bit

    def bf16_jobs(tag: str) -> tuple[nn.Module, list[AdapterJob]]:
        torch.manual_seed(20_000 + len(tag))
        return _base(pretrained_init).to(torch.bfloat16), _jobs(n_adapters, rank, instruction_data, tmp_path / tag)

    by_default = build_multi_adapter_model(*bf16_jobs("d"))
    explicit = build_multi_adapter_model(*bf16_jobs("ee"), quantize=False, seed=0)
    names = [f"a{i}" for i in range(n_adapters)]
    params = dict(by_default.named_parameters())
    defaults = [
        sum(isinstance(m, Linear4bit) for m in by_default.modules()),
        sum(len(changed_tensors(_adapter_state(by_default, n), _adapter_state(explicit, n))) for n in names),
        sorted({str(p.dtype) for k, p in params.items() if ".lora_" in k}),
        sorted({str(p.dtype) for k, p in params.items() if ".lora_" not in k}),
    ]
    first, first_losses = run(seed, "a")
    again, again_losses = run(seed, "bb")
    other, _ = run(seed + 1, "ccc")
    return {
        "adapters": len(first),
        "tensors_differing_same_seed": sum(len(changed_tensors(first[n], again[n])) for n in first),
        "step0_losses_differing": sum(first_losses[n] != again_losses[n] for n in first),
        "tensors_differing_other_seed": sum(len(changed_tensors(first[n], other[n])) for n in first),
        "defaults": defaults,
    }
