"""Benchmark stability: the coefficient of variation of each engine "brick" over its repetitions.

A brick is one operation the engine's speed depends on, built on the tiny preset so a CPU run
takes well under a second per brick.  Each repetition times ``inner`` back-to-back calls,
with ``inner`` calibrated after warm-up so that one repetition lasts about
:data:`TARGET_REPETITION_S`: a sub-millisecond call timed alone measures the timer and the
scheduler more than the engine.  Timing runs on one thread with the garbage collector paused,
both restored afterwards.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from engine.generate import generate
from engine.lora import LoraSettings, apply_lora
from pv.checkers import checker

TARGET_REPETITION_S = 0.02
CALIBRATION_S = 0.01
MAX_INNER = 1000
BATCH, SEQ = 4, 64
Call = Callable[[], object]


def _ids(vocab: int, batch: int, seq: int, seed: int) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _lora_model(factory: Any, seed: int) -> Any:
    model = apply_lora(factory(seed), LoraSettings(r=8))
    model.train()
    return model


def brick_lora_forward(factory: Any, seed: int) -> Call:
    model = _lora_model(factory, seed).eval()
    ids = _ids(model.config.vocab_size, BATCH, SEQ, seed)

    def run() -> object:
        with torch.inference_mode():
            return model(input_ids=ids).logits

    return run


def brick_optimizer(factory: Any, seed: int) -> Call:
    model = _lora_model(factory, seed)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.full_like(p, 1e-3)
    opt = torch.optim.AdamW(params, lr=1e-4)
    return opt.step


def brick_loss(factory: Any, seed: int) -> Call:
    model = factory(seed)
    ids = _ids(model.config.vocab_size, BATCH, SEQ, seed)
    with torch.inference_mode():
        logits = model(ids).logits.reshape(-1, model.config.vocab_size).clone()
    labels = ids.reshape(-1)
    return lambda: F.cross_entropy(logits, labels)


def brick_train_step(factory: Any, seed: int) -> Call:
    model = _lora_model(factory, seed)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = _ids(model.config.vocab_size, BATCH, SEQ, seed)

    def run() -> object:
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        return loss

    return run


def _generate(factory: Any, seed: int, batch: int, new_tokens: int) -> Call:
    model = factory(seed)
    ids = _ids(model.config.vocab_size, batch, 32, seed)
    return lambda: generate(model, ids, max_new_tokens=new_tokens, eos_token_id=[])


BRICKS: dict[str, Callable[[Any, int], Call]] = {
    "lora_forward": brick_lora_forward,
    "optimizer": brick_optimizer,
    "loss": brick_loss,
    "train_step": brick_train_step,
    "ttft": lambda factory, seed: _generate(factory, seed, batch=1, new_tokens=1),
    "throughput": lambda factory, seed: _generate(factory, seed, batch=1, new_tokens=32),
    "batch": lambda factory, seed: _generate(factory, seed, batch=4, new_tokens=16),
}


def time_repetitions(run: Call, repetitions: int, warmup: int) -> tuple[list[float], list[float], int]:
    """Wall and thread-CPU seconds per call for each timed repetition, and the calibrated ``inner``.

    A first call (lazy initialisation) is discarded, a batch of calls lasting at least
    :data:`CALIBRATION_S` calibrates ``inner``; then ``warmup`` whole repetitions run untimed
    (caches, kernel selection, allocator pools), then ``repetitions`` timed ones.
    """
    run()
    calls = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < CALIBRATION_S and calls < MAX_INNER:
        run()
        calls += 1
    once = max(elapsed / max(calls, 1), 1e-7)
    inner = max(1, min(MAX_INNER, math.ceil(TARGET_REPETITION_S / once)))
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(warmup):
        for _ in range(inner):
            run()
    for _ in range(repetitions):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(inner):
            run()
        cpu.append((time.thread_time() - start_cpu) / inner)
        wall.append((time.perf_counter() - start) / inner)
    return wall, cpu, inner


@checker(
    observes=["cv", "cpu_cv", "min_s", "median_s", "mean_s", "inner", "repetitions_timed"],
    ids=[f"FALSIFY-BENCH-00{i}" for i in range(1, 8)],
)
def brick_cv(tiny_model_factory: Any, brick: str, repetitions: int, warmup: int, seed: int = 0) -> dict[str, Any]:
    """Time one brick and report the dispersion of its per-call time over the repetitions."""
    if brick not in BRICKS:
        raise ValueError(f"unknown brick {brick!r}; known: {', '.join(BRICKS)}")
    if repetitions < 2:
        raise ValueError("a coefficient of variation needs at least two repetitions")
    run = BRICKS[brick](tiny_model_factory, seed)
    threads = torch.get_num_threads()
    gc_was_enabled = gc.isenabled()
    torch.set_num_threads(1)
    gc.disable()
    try:
        samples, cpu, inner = time_repetitions(run, repetitions, warmup)
    finally:
        torch.set_num_threads(threads)
        if gc_was_enabled:
            gc.enable()
    mean = statistics.fmean(samples)
    return {
        "cv": statistics.stdev(samples) / mean,
        "cpu_cv": statistics.stdev(cpu) / statistics.fmean(cpu),
        "min_s": min(samples),
        "median_s": statistics.median(samples),
        "mean_s": mean,
        "inner": inner,
        "repetitions_timed": len(samples),
    }
