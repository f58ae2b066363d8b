"""Benchmark "bricks": the small operations a training or serving run is made of, each timed for real.

Every brick builds its inputs once, runs ``warmup`` untimed calls, calibrates ``calls_per_rep``
so that one timed repetition lasts at least ``min_rep_s`` (a sub-millisecond brick timed one call
at a time measures the scheduler more than itself), then times ``reps`` repetitions of that many
calls (with a CUDA synchronize around each on GPU).  It reports the per-call time of each
repetition (repetition time / ``calls_per_rep``) as min / median / mean and the coefficient of
variation (stdev / mean over all the timed repetitions, none dropped), plus a rate where one makes
sense.

Bricks: ``lora_forward`` (a LoRA-wrapped forward), ``optimizer`` (one AdamW step over the LoRA
weights), ``loss`` (cross-entropy over a logits tensor), ``train_step`` (forward + backward +
AdamW), ``ttft`` (time to first token: prefill + one decode), ``throughput`` (decode tokens/s
with the KV cache) and ``batch`` (decode tokens/s at each batch size).

A brick is sized by a preset or by a real checkpoint's architecture (``BrickSettings.config``;
random weights: the timing does not depend on their values).  Before anything is allocated the
brick's memory is computed analytically on the ``meta`` device (weights, LoRA and AdamW state, KV
cache, logits, activations); a brick that would not fit in ``max_memory_gib`` (default: 80% of
what the device has available) is reported ``not run`` with those figures instead of being
killed for memory halfway through.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil
import torch
import torch.nn.functional as F
from torch import nn

from engine.config import ModelConfig, preset
from engine.faults import FAULTS
from engine.generate import generate
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.memory import estimate
from engine.model import build_model
from pv.noise import cpu_seconds

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
    min_rep_s: float = 0.02  # each timed repetition batches calls until it lasts at least this
    threads: int = 0  # torch intra-op threads while timing; 0 leaves torch's setting alone
    # time a fixed reference workload after every repetition (the machine's noise floor, same moments)
    reference: bool = False
    qlora: bool = False
    lora_rank: int = 8
    device: str = "cpu"
    seed: int = 0
    config: ModelConfig | None = None  # a checkpoint's architecture; None: the preset's
    max_memory_gib: float | None = None  # None: 80% of the device's available memory


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
    calls_per_rep: int = 1  # calls of the brick per timed repetition; the times above are per call
    extra: dict[str, Any] = field(default_factory=dict)
    not_run: str | None = None  # why the brick was only computed, not timed (times are then NaN)

    def to_dict(self) -> dict[str, Any]:
        # a brick that was not run has no times: null in JSON (NaN is not JSON)
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in asdict(self).items()}


def _sync(device: torch.device) -> None:
    if FAULTS.active("bricks_cuda_unsynchronised"):  # pragma: no mutate
        return  # pragma: no mutate -- the defect: a GPU brick times the kernel launches alone
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Timing:
    """What :func:`time_call` measured.

    ``per_call_s[i]`` is timed repetition ``i``'s wall time divided by ``calls_per_rep``; the
    warm-up and calibration calls are never part of it (``warmup_s`` keeps the warm-up calls' own
    times, for a look at the cold start, and nothing else uses them).  ``cpu_per_call_s`` is the
    same for the process's CPU time, a diagnostic only: a wall-time CV well above the CPU-time CV
    says the process waited for a core; equal CVs say the work itself took longer or shorter, which
    a co-runner sharing caches, a hypervisor or spinning intra-op threads can cause as well as the
    brick.  On a GPU the CPU time means little.
    """

    per_call_s: list[float]
    rep_s: list[float]
    calls_per_rep: int
    warmup_s: list[float]
    calibration_calls: int
    cpu_per_call_s: list[float] = field(default_factory=list)  # process CPU time, same repetitions
    # the reference workload's per-call wall and CPU times, one after each repetition (time_call's
    # ``reference``): what the machine alone did to a fixed piece of work at the same moments
    reference_per_call_s: list[float] = field(default_factory=list)
    reference_cpu_per_call_s: list[float] = field(default_factory=list)


REFERENCE_SIZE = 96  # the reference workload's square matrices
REFERENCE_SWEEP_FLOATS = 1 << 21  # 8 MiB copied each call: more than a core's L2, less than a shared L3


def reference_workload(device: torch.device | None = None) -> Callable[[], object]:
    """A fixed piece of work that depends on nothing the engine does: a copy of
    :data:`REFERENCE_SWEEP_FLOATS` fp32 values, then a chain of four fp32 matmuls of
    :data:`REFERENCE_SIZE` squares, renormalised.  Timed between a brick's repetitions, it is the
    machine's speed at those moments (pv.noise.dispersion): the matmuls feel a neighbour on the
    core, the copy one on the shared cache and the memory bus, which slow a brick while it holds
    its core and which CPU time alone cannot see."""
    g: torch.Generator | None = torch.Generator().manual_seed(0)
    if FAULTS.active("reference_workload_unseeded"):  # the defect: other matrices in every process
        g = None  # pragma: no mutate
    a = torch.randn(REFERENCE_SIZE, REFERENCE_SIZE, generator=g).to(device or "cpu")
    b = torch.randn(REFERENCE_SIZE, REFERENCE_SIZE, generator=g).to(device or "cpu") / REFERENCE_SIZE**0.5
    swept = torch.ones(REFERENCE_SWEEP_FLOATS, device=device or "cpu")
    sweep = torch.empty_like(swept)

    def work() -> object:
        sweep.copy_(swept)
        x = a
        for _ in range(4):
            x = torch.tanh(x @ b)
        return x

    return work


Clock = Callable[[], float]


def _timed_batch(fn: Callable[[], object], n: int, device: torch.device, clock: Clock) -> float:
    _sync(device)
    t0 = clock()
    for _ in range(n):
        fn()
    _sync(device)
    return clock() - t0


CALIBRATION_MARGIN = 1.25  # calls_per_rep aims at this multiple of min_rep_s
RETIME_ROUNDS = 2  # repetitions shorter than min_rep_s are timed again with more calls, this often


def calibrate(
    fn: Callable[[], object], min_rep_s: float, *, device: torch.device, clock: Clock = time.perf_counter
) -> tuple[int, int]:
    """The number of calls ``n`` per repetition that makes one repetition last ``min_rep_s`` or more.

    Times a batch of 1 call, then ever larger batches (aiming at half the target, at least doubling,
    at most x100) until one lasts a quarter of the target or more; from that batch's per-call time,
    ``n`` is what lasts :data:`CALIBRATION_MARGIN` times the target.  Returns ``(n, calls spent
    calibrating)``.  A repetition can still come out shorter than the target if ``fn`` runs more
    than 20% faster than it did while calibrating; :func:`time_call` then times its repetitions
    again with more calls.
    """
    if min_rep_s <= 0:
        return 1, 0
    n, spent = 1, 0
    while True:
        dt = _timed_batch(fn, n, device, clock)
        spent += n
        if dt >= min_rep_s / 4:
            # (1 - 1e-9): float noise in the clock difference must not add a call
            return max(1, math.ceil(CALIBRATION_MARGIN * min_rep_s * n / dt * (1 - 1e-9))), spent
        n = min(100 * n, max(2 * n, math.ceil(min_rep_s / 2 * n / dt) if dt > 0 else 100 * n))


def time_call(
    fn: Callable[[], object],
    *,
    warmup: int,
    reps: int,
    device: torch.device,
    min_rep_s: float = 0.0,
    clock: Clock = time.perf_counter,
    reference: Callable[[], object] | None = None,
) -> Timing:
    """Time ``reps`` repetitions of ``calls_per_rep`` calls of ``fn`` after ``warmup`` untimed calls.

    After the warm-up, :func:`calibrate` picks ``calls_per_rep`` so that one repetition lasts at
    least ``min_rep_s`` (1 when ``min_rep_s`` is 0 or one call already lasts that long); each
    repetition is bracketed by a device synchronize, and its time divided by ``calls_per_rep`` is
    one per-call figure.  When a repetition falls short of ``min_rep_s`` (the brick ran faster
    than while calibrating), ``calls_per_rep`` is scaled from the shortest and every repetition
    is timed again, up to :data:`RETIME_ROUNDS` times; the discarded calls count as calibration.
    ``clock`` is the wall clock (injectable so that a test can drive it).
    With ``reference``, that workload is calibrated the same way and one repetition of it is timed
    right after each of ``fn``'s, so both series see the same moments of the machine.
    """
    if reps < 2:
        raise ValueError("reps must be >= 2 to give a spread")
    if warmup < 0:
        raise ValueError("warmup must be >= 0")
    if min_rep_s < 0:
        raise ValueError("min_rep_s must be >= 0")
    warm = [_timed_batch(fn, 1, device, clock) for _ in range(warmup)]
    n, spent = calibrate(fn, min_rep_s, device=device, clock=clock)
    m = 0
    if reference is not None:
        for _ in range(max(warmup, 1)):
            _timed_batch(reference, 1, device, clock)
        m, _ = calibrate(reference, min_rep_s, device=device, clock=clock)
    for attempt in range(RETIME_ROUNDS + 1):
        rep_s, cpu_s, ref_s, ref_cpu_s = [], [], [], []
        for _ in range(reps):
            c0 = cpu_seconds()
            rep_s.append(_timed_batch(fn, n, device, clock))
            cpu_s.append(cpu_seconds() - c0)
            if reference is not None:
                c0 = cpu_seconds()
                ref_s.append(_timed_batch(reference, m, device, clock) / m)
                ref_cpu_s.append((cpu_seconds() - c0) / m)
        if min(rep_s) >= min_rep_s or attempt == RETIME_ROUNDS:
            break
        # A few hundred calls in, a microsecond brick runs faster than it did while calibrating
        # (measured: 13 us a call in the repetitions, 17 us in calibration, so 1 ms repetitions
        # lasted 0.96 ms).  These repetitions are a long run's per-call time: scale from them.
        if not FAULTS.active("timer_retimed_calls_uncounted"):  # the defect: discarded repetitions vanish
            spent += reps * n
        n = max(n + 1, math.ceil(CALIBRATION_MARGIN * min_rep_s * n / min(rep_s)))
    per_call = [t / n for t in rep_s]
    if FAULTS.active("bricks_warmup_timed"):  # the defect: the warm-up calls kept as timed repetitions
        rep_s, per_call = warm + rep_s, warm + per_call  # pragma: no mutate
    return Timing(per_call, rep_s, n, warm, spent, [t / n for t in cpu_s], ref_s, ref_cpu_s)


def cv_of(times: Sequence[float]) -> float:
    """Coefficient of variation: sample stdev / mean over every time given (nothing dropped)."""
    mean = statistics.fmean(times)
    return statistics.stdev(times) / mean if len(times) > 1 and mean > 0 else 0.0


def summarize(
    name: str,
    times: Sequence[float],
    warmup: int,
    per_call_items: float | None = None,
    unit: str | None = None,
    *,
    calls_per_rep: int = 1,
    **extra: Any,
) -> BrickResult:
    """Min / median / mean / CV of per-call ``times`` (one per timed repetition)."""
    median = statistics.median(times)
    rate = per_call_items / median if per_call_items is not None and median > 0 else None
    return BrickResult(
        name=name,
        reps=len(times),
        warmup=warmup,
        min_s=min(times),
        median_s=median,
        mean_s=statistics.fmean(times),
        cv=cv_of(times),
        rate=rate,
        rate_unit=unit,
        calls_per_rep=calls_per_rep,
        extra=dict(extra),
    )


def summarize_timing(
    name: str, timing: Timing, warmup: int, per_call_items: float | None = None, unit: str | None = None, **extra: Any
) -> BrickResult:
    """:func:`summarize` of a :class:`Timing`, with its repetition lengths in ``extra``."""
    series: dict[str, Any] = {}
    if timing.reference_cpu_per_call_s:  # the raw series a noise-aware judge needs (pv.noise.dispersion)
        series = {
            "cpu_per_call_s": timing.cpu_per_call_s,
            "reference_cpu_per_call_s": timing.reference_cpu_per_call_s,
            "reference_cv": cv_of(timing.reference_per_call_s),
            "reference_cpu_cv": cv_of(timing.reference_cpu_per_call_s),
        }
    cpu_series = timing.cpu_per_call_s
    if FAULTS.active("summary_cpu_cv_from_wall_times"):  # the defect: the CPU CV repeats the wall-clock one
        cpu_series = timing.per_call_s if cpu_series else cpu_series  # pragma: no mutate
    return summarize(
        name,
        timing.per_call_s,
        warmup,
        per_call_items,
        unit,
        calls_per_rep=timing.calls_per_rep,
        shortest_rep_s=min(timing.rep_s),
        cpu_cv=cv_of(cpu_series) if cpu_series else None,
        **series,
        **extra,
    )


def _config(s: BrickSettings) -> ModelConfig:
    cfg = s.config if s.config is not None else preset(s.preset)
    if cfg.intermediate_size % 64:  # keep every MLP projection NF4-quantizable on CPU
        cfg = cfg.replace(intermediate_size=(cfg.intermediate_size + 63) // 64 * 64)
    if FAULTS.active("bricks_mlp_width_not_rounded"):  # the defect: the checkpoint's own width kept
        cfg = s.config if s.config is not None else preset(s.preset)  # pragma: no mutate
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
    if s.threads < 0:
        raise ValueError("threads must be >= 0 (0: torch's default)")
    if s.threads == 0:
        return _run_brick(name, s)
    before = torch.get_num_threads()
    torch.set_num_threads(s.threads)
    try:
        return _run_brick(name, s)
    finally:
        torch.set_num_threads(before)


GIB = 2**30
MEMORY_SHARE = 0.8  # of the available memory a brick may plan to use
ACTIVATION_FACTOR = 16  # live fp32 values per token per hidden unit per layer in a train step (rough)


def brick_memory(name: str, s: BrickSettings, cfg: ModelConfig) -> dict[str, float]:
    """The brick's memory in GiB by part, computed on ``meta`` (nothing is allocated)."""

    meta = build_model(cfg, device="meta")
    params = meta.num_parameters()
    parts: dict[str, float] = {}
    lora = LoraSettings(r=s.lora_rank, alpha=2 * s.lora_rank)
    if name in ("lora_forward", "optimizer", "train_step"):
        est = estimate(meta, "qlora" if s.qlora else "lora", base_dtype=torch.float32, lora=lora)
        parts["weights"] = (est.base_weight_bytes + est.trainable_weight_bytes) / GIB
        if name != "lora_forward":
            parts["gradients_and_adamw"] = (est.gradient_bytes + est.optimizer_bytes) / GIB
            tokens = s.batch_size * s.seq_len
            parts["activations"] = tokens * cfg.hidden_size * cfg.num_hidden_layers * ACTIVATION_FACTOR * 4 / GIB
        parts["logits"] = s.batch_size * s.seq_len * cfg.vocab_size * 4 * (3 if name != "lora_forward" else 1) / GIB
    elif name == "loss":
        parts["logits"] = s.batch_size * s.seq_len * cfg.vocab_size * 4 * 2 / GIB
    else:
        batch = max(s.batch_sizes) if name == "batch" else s.batch_size
        length = s.seq_len + (1 if name == "ttft" else s.new_tokens)
        parts["weights"] = params * 4 / GIB
        kv = 2 * cfg.num_hidden_layers * batch * length * cfg.num_key_value_heads * cfg.head_dim * 4
        if FAULTS.active("bricks_kv_cache_keys_only"):  # the defect: the values' half of the cache left out
            kv //= 2  # pragma: no mutate
        parts["kv_cache"] = kv / GIB
        parts["logits"] = batch * s.seq_len * cfg.vocab_size * 4 / GIB
    parts["total"] = sum(parts.values())
    parts["parameters"] = float(params)
    return parts


def available_memory_gib(device: torch.device) -> float:
    """What the device can still give: free CUDA memory, or the host's available RAM."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return float(free) / GIB

    return float(psutil.virtual_memory().available) / GIB


def _not_run(name: str, s: BrickSettings, memory: dict[str, float], limit: float, cfg: ModelConfig) -> BrickResult:
    need = memory["total"]
    reason = (
        f"needs about {need:.1f} GiB, over the {limit:.1f} GiB this run may use; computed on meta: "
        f"{memory['parameters']:.3g} parameters, {2 * memory['parameters']:.3g} FLOPs per token forward"
    )
    extra = {
        "preset": s.preset if s.config is None else "checkpoint",
        "device": s.device,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "memory_gib": memory,
        "max_memory_gib": limit,
        "flops_per_token": 2 * memory["parameters"],
    }
    nan = math.nan
    return BrickResult(name, 0, 0, nan, nan, nan, nan, extra=extra, not_run=reason)


def _run_brick(name: str, s: BrickSettings) -> BrickResult:
    device = torch.device(s.device)
    cfg = _config(s)
    memory = brick_memory(name, s, cfg)
    limit = s.max_memory_gib if s.max_memory_gib is not None else MEMORY_SHARE * available_memory_gib(device)
    if memory["total"] > limit:
        return _not_run(name, s, memory, limit, cfg)
    ids = _ids(s, cfg, s.batch_size, s.seq_len)
    tokens = ids.numel()
    common = {
        "preset": s.preset if s.config is None else "checkpoint",
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "memory_gib": round(memory["total"], 4),
        "device": str(device),
        "batch_size": s.batch_size,
        "seq_len": s.seq_len,
        "qlora": s.qlora,
        "min_rep_s": s.min_rep_s,
        "threads": torch.get_num_threads(),
    }

    reference = reference_workload(device) if s.reference else None

    def timed(fn: Callable[[], object]) -> Timing:
        return time_call(fn, warmup=s.warmup, reps=s.reps, device=device, min_rep_s=s.min_rep_s, reference=reference)

    if name == "lora_forward":
        model = _model(s, cfg, lora=True).eval()

        def forward() -> None:
            with torch.no_grad():
                model(ids)

        return summarize_timing(name, timed(forward), s.warmup, tokens, "tokens/s", **common)
    if name == "loss":
        logits = torch.randn(s.batch_size, s.seq_len, cfg.vocab_size, device=device)
        timing = timed(lambda: F.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab_size), ids[:, 1:].reshape(-1)))
        return summarize_timing(name, timing, s.warmup, tokens, "tokens/s", vocab_size=cfg.vocab_size, **common)
    if name in ("optimizer", "train_step"):
        model = _model(s, cfg, lora=True).train()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-4)
        if name == "optimizer":
            model(ids, labels=ids).loss.backward()
            counted = list(model.parameters()) if FAULTS.active("bricks_optimizer_counts_frozen") else params
            n_params = sum(p.numel() for p in counted)
            return summarize_timing(name, timed(opt.step), s.warmup, n_params, "params/s", **common)

        def step() -> None:
            model(ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        return summarize_timing(name, timed(step), s.warmup, tokens, "tokens/s", **common)

    lm: Any = _model(s, cfg, lora=False).eval()
    if name == "ttft":
        first = 1
        if FAULTS.active("bricks_ttft_two_tokens"):  # the defect: the first token's time includes a second
            first = 2  # pragma: no mutate
        timing = timed(lambda: generate(lm, ids, max_new_tokens=first, eos_token_id=[]))
        return summarize_timing(name, timing, s.warmup, None, None, prompt_tokens=s.seq_len, **common)
    if name == "throughput":
        timing = timed(lambda: generate(lm, ids, max_new_tokens=s.new_tokens, eos_token_id=[]))
        new = s.batch_size * s.new_tokens
        return summarize_timing(name, timing, s.warmup, new, "new tokens/s", new_tokens=s.new_tokens, **common)
    # batch: every batch size is timed and reported in by_batch; the headline figures are the
    # largest batch's, and worst_cv is the largest CV over all of them.
    by_batch: dict[str, dict[str, Any]] = {}
    timings: dict[int, Timing] = {}
    for b in s.batch_sizes:
        prompt = _ids(s, cfg, b, s.seq_len)

        def decode(p: torch.Tensor = prompt) -> object:
            return generate(lm, p, max_new_tokens=s.new_tokens, eos_token_id=[])

        t = timings[b] = timed(decode)
        median = statistics.median(t.per_call_s)
        by_batch[str(b)] = {
            "median_s": median,
            "tokens_per_s": b * s.new_tokens / median,
            "cv": cv_of(t.per_call_s),
            "calls_per_rep": t.calls_per_rep,
        }
        if s.reference:
            by_batch[str(b)]["cpu_per_call_s"] = t.cpu_per_call_s
            by_batch[str(b)]["reference_cpu_per_call_s"] = t.reference_cpu_per_call_s
    largest = max(s.batch_sizes)
    return summarize_timing(
        name,
        timings[largest],
        s.warmup,
        largest * s.new_tokens,
        "new tokens/s",
        by_batch=by_batch,
        worst_cv=max(v["cv"] for v in by_batch.values()),
        new_tokens=s.new_tokens,
        **{**common, "batch_size": largest},
    )


def run_bricks(names: Sequence[str] | None = None, s: BrickSettings | None = None) -> list[BrickResult]:
    return [run_brick(n, s) for n in (names or BRICKS)]


def results_json(results: Sequence[BrickResult]) -> str:
    return json.dumps([r.to_dict() for r in results], indent=2, sort_keys=True)


def results_table(results: Sequence[BrickResult]) -> str:
    head = ["brick", "calls/rep", "min ms", "median ms", "cv %", "cpu cv %", "rate"]
    percent = 100
    if FAULTS.active("bench_table_cv_as_fraction"):  # the defect: "cv %" holds the fraction
        percent = 1  # pragma: no mutate
    rows = [
        [r.name, "-", "-", "-", "-", "-", f"not run: {r.not_run}"]
        if r.not_run
        else [
            r.name,
            str(r.calls_per_rep),
            f"{r.min_s * 1e3:.3f}",
            f"{r.median_s * 1e3:.3f}",
            f"{r.cv * percent:.1f}",
            f"{r.extra['cpu_cv'] * percent:.1f}" if r.extra.get("cpu_cv") is not None else "-",
            f"{r.rate:,.0f} {r.rate_unit}" if r.rate is not None else "-",
        ]
        for r in results
    ]
    widths = [max(len(c) for c in col) for col in zip(head, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in rows)])
