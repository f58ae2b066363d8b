"""Benchmark "bricks": the small operations a training or serving run is made of, each timed for real.

Every brick builds its inputs once, runs ``warmup`` untimed repetitions, then ``reps`` timed ones
(with a CUDA synchronize around each on GPU) and reports min / median / mean and the coefficient
of variation (stdev / mean) of the wall times, plus a rate where one makes sense.

Bricks: ``lora_forward`` (a LoRA-wrapped forward), ``optimizer`` (one AdamW step over the LoRA
weights), ``loss`` (cross-entropy over a logits tensor), ``train_step`` (forward + backward +
AdamW), ``ttft`` (time to first token: prefill + one decode), ``throughput`` (decode tokens/s
with the KV cache) and ``batch`` (decode tokens/s at each batch size).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import ModelConfig, preset
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.model import build_model

BRICKS: tuple[str, ...] = ("lora_forward", "optimizer", "loss", "train_step", "ttft", "throughput", "batch")


@dataclass(frozen=True)
class BrickSettings:
    preset: str = "tiny"
    batch_size: int = 4
    seq_len: int = 64
    new_tokens: int = 16
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8)
    warmup: int = 2
    reps: int = 7
    qlora: bool = False
    lora_rank: int = 8
    device: str = "cpu"
    seed: int = 0


@dataclass
class BrickResult:
    name: str
    reps: int
    warmup: int
    min_s: float
    median_s: float
    mean_s: float
    cv: float
    rate: float | None = None  # items per second at the median time
    rate_unit: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], object], *, warmup: int, reps: int, device: torch.device) -> list[float]:
    """Wall time of ``reps`` calls of ``fn`` after ``warmup`` untimed ones."""
    if reps < 2:
        raise ValueError("reps must be >= 2 to give a spread")
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return times


def summarize(
    name: str,
    times: Sequence[float],
    warmup: int,
    per_call_items: float | None = None,
    unit: str | None = None,
    **extra: Any,
) -> BrickResult:
    mean = statistics.fmean(times)
    median = statistics.median(times)
    cv = statistics.stdev(times) / mean if len(times) > 1 and mean > 0 else 0.0
    rate = per_call_items / median if per_call_items is not None and median > 0 else None
    return BrickResult(name, len(times), warmup, min(times), median, mean, cv, rate, unit, dict(extra))


def _config(s: BrickSettings) -> ModelConfig:
    cfg = preset(s.preset)
    if cfg.intermediate_size % 64:  # keep every MLP projection NF4-quantizable on CPU
        cfg = cfg.replace(intermediate_size=(cfg.intermediate_size + 63) // 64 * 64)
    return cfg


def _model(s: BrickSettings, cfg: ModelConfig, *, lora: bool) -> nn.Module:
    torch.manual_seed(s.seed)
    model: nn.Module = build_model(cfg, device=s.device)
    if lora:
        settings = LoraSettings(r=s.lora_rank, alpha=2 * s.lora_rank)
        model = prepare_qlora(model, settings, device=s.device) if s.qlora else apply_lora(model, settings)
    return model


def _ids(s: BrickSettings, cfg: ModelConfig, batch: int, length: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(s.seed)
    return torch.randint(3, cfg.vocab_size, (batch, length), generator=gen).to(s.device)


def run_brick(name: str, s: BrickSettings | None = None) -> BrickResult:
    """Measure one brick; ``name`` is one of :data:`BRICKS`."""
    s = s or BrickSettings()
    if name not in BRICKS:
        raise ValueError(f"unknown brick {name!r}; known: {', '.join(BRICKS)}")
    device = torch.device(s.device)
    cfg = _config(s)
    ids = _ids(s, cfg, s.batch_size, s.seq_len)
    tokens = ids.numel()
    common = {
        "preset": s.preset,
        "device": str(device),
        "batch_size": s.batch_size,
        "seq_len": s.seq_len,
        "qlora": s.qlora,
    }
    if name == "lora_forward":
        model = _model(s, cfg, lora=True).eval()

        def forward() -> None:
            with torch.no_grad():
                model(ids)

        times = time_call(forward, warmup=s.warmup, reps=s.reps, device=device)
        return summarize(name, times, s.warmup, tokens, "tokens/s", **common)
    if name == "loss":
        logits = torch.randn(s.batch_size, s.seq_len, cfg.vocab_size, device=device)
        times = time_call(
            lambda: F.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab_size), ids[:, 1:].reshape(-1)),
            warmup=s.warmup,
            reps=s.reps,
            device=device,
        )
        return summarize(name, times, s.warmup, tokens, "tokens/s", vocab_size=cfg.vocab_size, **common)
    if name in ("optimizer", "train_step"):
        model = _model(s, cfg, lora=True).train()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-4)
        if name == "optimizer":
            model(ids, labels=ids).loss.backward()
            times = time_call(opt.step, warmup=s.warmup, reps=s.reps, device=device)
            return summarize(name, times, s.warmup, sum(p.numel() for p in params), "params/s", **common)

        def step() -> None:
            model(ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        times = time_call(step, warmup=s.warmup, reps=s.reps, device=device)
        return summarize(name, times, s.warmup, tokens, "tokens/s", **common)
    from engine.generate import generate

    lm: Any = _model(s, cfg, lora=False).eval()
    if name == "ttft":
        times = time_call(
            lambda: generate(lm, ids, max_new_tokens=1, eos_token_id=[]), warmup=s.warmup, reps=s.reps, device=device
        )
        return summarize(name, times, s.warmup, None, None, prompt_tokens=s.seq_len, **common)
    if name == "throughput":
        times = time_call(
            lambda: generate(lm, ids, max_new_tokens=s.new_tokens, eos_token_id=[]),
            warmup=s.warmup,
            reps=s.reps,
            device=device,
        )
        return summarize(
            name, times, s.warmup, s.batch_size * s.new_tokens, "new tokens/s", new_tokens=s.new_tokens, **common
        )
    by_batch: dict[str, dict[str, float]] = {}
    all_times: list[float] = []
    for b in s.batch_sizes:
        prompt = _ids(s, cfg, b, s.seq_len)

        def decode(p: torch.Tensor = prompt) -> object:
            return generate(lm, p, max_new_tokens=s.new_tokens, eos_token_id=[])

        t = time_call(decode, warmup=s.warmup, reps=s.reps, device=device)
        median = statistics.median(t)
        by_batch[str(b)] = {
            "median_s": median,
            "tokens_per_s": b * s.new_tokens / median,
            "cv": statistics.stdev(t) / statistics.fmean(t),
        }
        all_times = t
    largest = max(s.batch_sizes)
    return summarize(
        name,
        all_times,
        s.warmup,
        largest * s.new_tokens,
        "new tokens/s",
        by_batch=by_batch,
        new_tokens=s.new_tokens,
        **{**common, "batch_size": largest},
    )


def run_bricks(names: Sequence[str] | None = None, s: BrickSettings | None = None) -> list[BrickResult]:
    return [run_brick(n, s) for n in (names or BRICKS)]


def results_json(results: Sequence[BrickResult]) -> str:
    return json.dumps([r.to_dict() for r in results], indent=2, sort_keys=True)


def results_table(results: Sequence[BrickResult]) -> str:
    head = ["brick", "min ms", "median ms", "cv %", "rate"]
    rows = [
        [
            r.name,
            f"{r.min_s * 1e3:.3f}",
            f"{r.median_s * 1e3:.3f}",
            f"{r.cv * 100:.1f}",
            f"{r.rate:,.0f} {r.rate_unit}" if r.rate is not None else "-",
        ]
        for r in results
    ]
    widths = [max(len(c) for c in col) for col in zip(head, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in rows)])
