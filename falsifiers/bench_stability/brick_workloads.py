"""What each bench brick runs: its inputs, its model, its decode requests, its timer's settings.

The other bench falsifiers judge the timer and the report; this one holds the bricks to their
documentation (engine/bricks.py): the token ids every brick feeds are ``randint(3, vocab)`` from a
generator seeded with the settings' seed, the LoRA bricks time a model whose adapters have the
settings' rank and an alpha of twice it, the decode bricks ask ``generate`` for exactly one token
(ttft) or ``new_tokens`` (throughput, batch) with no stop token (so every call decodes the count the
rate divides by), every timed call gets the settings' warm-up, repetitions, repetition target and
the reference workload when asked for, and the batch brick reports each batch size's timing as
its documentation lists.  The timer is replaced by a recorder that runs each workload once and
returns a scripted Timing, so what a brick reports can be written out here from that Timing.

A brick that does not fit is computed on ``meta`` and reported "not run": its parameters are the
meta model's with the MLP width rounded up to a multiple of 64 (NF4 blocks on CPU), its weights
and optimizer state are engine.memory.estimate's for its method and LoRA settings, nothing ran
(0 repetitions, 0 warm-up calls), and without ``max_memory_gib`` the limit is 80% of the
available memory.  A brick needing exactly the limit runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

import psutil
import torch

import engine.generate
from engine.bricks import BRICKS, BrickSettings, Timing, cv_of, reference_workload, run_brick, run_bricks, summarize
from engine.config import preset
from engine.lora import LoraSettings
from engine.memory import estimate
from engine.model import build_model
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

KNOWN = "lora_forward, optimizer, loss, train_step, ttft, throughput, batch"  # the documented bricks, in order
LORA_BRICKS = ("lora_forward", "optimizer", "train_step")
DECODE_BRICKS = ("ttft", "throughput", "batch")
GIB = 2**30


def _ids(seed: int, vocab: int, batch: int, length: int) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


def _cv(xs: list[float]) -> float:
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) / mean


class Recorder:
    """Stands in for ``time_call`` and ``generate``, and watches every module call."""

    def __init__(self) -> None:
        self.timed: list[dict[str, Any]] = []
        self.timings: list[Any] = []
        self.generated: list[dict[str, Any]] = []
        self.roots: list[tuple[torch.nn.Module, torch.Tensor]] = []
        self.depth = 0

    def time_call(self, fn: Callable[[], object], **kw: Any) -> Any:

        k = len(self.timed) + 1  # every timed call gets other times, so a report shows whose they are
        self.timed.append(kw)
        fn()
        per_call = [0.25 * k, 0.5 * k, 0.375 * k]
        ref = kw.get("reference") is not None
        timing = Timing(
            per_call_s=per_call,
            rep_s=[3 * t for t in per_call],
            calls_per_rep=3,
            warmup_s=[0.125],
            calibration_calls=4,
            cpu_per_call_s=[0.125 * k, 0.25 * k, 0.5 * k],
            reference_per_call_s=[0.0625, 0.125, 0.25] if ref else [],
            reference_cpu_per_call_s=[0.0625, 0.0625, 0.125] if ref else [],
        )
        self.timings.append(timing)
        return timing

    def _pre(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        # the outermost call of each forward: the model the brick built, and the ids it feeds
        if self.depth == 0 and args and isinstance(args[0], torch.Tensor):
            self.roots.append((module, args[0].clone()))
        self.depth += 1

    def _post(self, module: torch.nn.Module, args: tuple[Any, ...], out: Any) -> None:
        self.depth -= 1

    @contextmanager
    def installed(self) -> Iterator[None]:

        real = engine.generate.generate

        def generate(model: Any, input_ids: torch.Tensor, *args: Any, **kw: Any) -> Any:
            self.generated.append({"prompt": input_ids.clone(), "args": args, **kw})
            return real(model, input_ids, *args, **kw)

        hooks = [
            torch.nn.modules.module.register_module_forward_pre_hook(self._pre),
            torch.nn.modules.module.register_module_forward_hook(self._post),
        ]
        try:
            with (
                mock.patch("engine.bricks.time_call", self.time_call),
                mock.patch("engine.bricks.generate", generate),  # where the bench looks it up
            ):
                yield
        finally:
            for h in hooks:
                h.remove()


def _lora_of(model: torch.nn.Module) -> tuple[int | None, float | None, list[float]]:
    config = getattr(model, "peft_config", {}).get("default")
    layers: list[dict[str, float]] = [getattr(m, "scaling", None) for m in model.modules()]  # type: ignore[misc]
    scalings = [float(s["default"]) for s in layers if isinstance(s, dict)]
    return (config.r, float(config.lora_alpha), scalings) if config is not None else (None, None, scalings)


def _expected_by_batch(timings: list[Any], sizes: tuple[int, ...], new_tokens: int, reference: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b, t in zip(sizes, timings, strict=True):
        median = sorted(t.per_call_s)[len(t.per_call_s) // 2]
        row: dict[str, Any] = {
            "median_s": median,
            "tokens_per_s": b * new_tokens / median,
            "cv": _cv(t.per_call_s),
            "calls_per_rep": t.calls_per_rep,
        }
        if reference:
            row["cpu_per_call_s"] = t.cpu_per_call_s
            row["reference_cpu_per_call_s"] = t.reference_cpu_per_call_s
        out[str(b)] = row
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12)
    return bool(a == b)


def _timed_run(name: str, s: Any, differing: list[str]) -> dict[str, int]:
    """One brick under the recorder; what it ran against what its documentation says."""

    rec = Recorder()
    with rec.installed():
        result = run_brick(name, s)
    vocab = s.config.vocab_size if s.config is not None else 512
    where = f"{name} (seed {s.seed}, reference {s.reference}, config {'given' if s.config else 'preset'})"
    for kw in rec.timed:
        got = {k: kw.get(k) for k in ("warmup", "reps", "min_rep_s", "device")}
        want = {"warmup": s.warmup, "reps": s.reps, "min_rep_s": s.min_rep_s, "device": torch.device(s.device)}
        if got != want:
            differing.append(f"{where}: timed with {got}, documented {want}")
        ref = kw.get("reference")
        if (ref is not None) != s.reference:
            differing.append(f"{where}: reference workload {'given' if ref else 'absent'}, asked {s.reference}")
        elif ref is not None and not torch.equal(torch.as_tensor(ref()), torch.as_tensor(reference_workload()())):
            differing.append(f"{where}: the reference timed is not engine.bricks.reference_workload")
    expected_timed = len(s.batch_sizes) if name == "batch" else 1
    if len(rec.timed) != expected_timed:
        differing.append(f"{where}: {len(rec.timed)} timed calls, documented {expected_timed}")
    # the ids: every forward the LoRA bricks make, every decode request
    if name in LORA_BRICKS:
        want_ids = _ids(s.seed, vocab, s.batch_size, s.seq_len)
        if not rec.roots:
            differing.append(f"{where}: no forward seen")
        for model, ids in rec.roots:
            if not torch.equal(ids, want_ids):
                differing.append(f"{where}: fed ids {ids.shape} other than randint(3, vocab) seeded {s.seed}")
            r, alpha, scalings = _lora_of(model)
            if (r, alpha) != (s.lora_rank, 2.0 * s.lora_rank) or not scalings or set(scalings) != {2.0}:
                differing.append(f"{where}: LoRA r={r} alpha={alpha} scalings={sorted(set(scalings))}")
    if name in DECODE_BRICKS:
        sizes = s.batch_sizes if name == "batch" else (s.batch_size,)
        want_new = 1 if name == "ttft" else s.new_tokens
        if len(rec.generated) != len(sizes):
            differing.append(f"{where}: {len(rec.generated)} decode requests for {len(sizes)} batch sizes")
        for b, call in zip(sizes, rec.generated, strict=False):
            request = {k: v for k, v in call.items() if k != "prompt"}
            if request != {"args": (), "max_new_tokens": want_new, "eos_token_id": []}:
                differing.append(f"{where}: batch {b} decoded with {request}")
            if not torch.equal(call["prompt"], _ids(s.seed, vocab, b, s.seq_len)):
                differing.append(f"{where}: batch {b}'s prompt is not randint(3, vocab) seeded {s.seed}")
    want_preset = s.preset if s.config is None else "checkpoint"
    if result.extra.get("preset") != want_preset or result.not_run is not None:
        differing.append(f"{where}: preset {result.extra.get('preset')!r} (not run: {result.not_run})")
    if name == "batch":
        timings = rec.timings
        want = _expected_by_batch(timings, s.batch_sizes, s.new_tokens, s.reference)
        if not _same(result.extra.get("by_batch"), want):
            differing.append(f"{where}: by_batch {result.extra.get('by_batch')} != {want}")
        if result.calls_per_rep != 3 or not math.isclose(
            result.extra.get("worst_cv", 0.0), max(_cv(t.per_call_s) for t in timings)
        ):
            differing.append(f"{where}: worst_cv {result.extra.get('worst_cv')}")
    return {"timed": len(rec.timed), "generated": len(rec.generated), "forwards": len(rec.roots)}


def _not_run(name: str, s: Any, differing: list[str]) -> float:
    """A brick over its limit: computed on meta, its figures written out here; returns its total."""

    result = run_brick(name, s)
    cfg = s.config if s.config is not None else preset(s.preset)
    width = -(-cfg.intermediate_size // 64) * 64  # rounded up to a multiple of 64
    meta = build_model(cfg.replace(intermediate_size=width), device="meta")
    memory = result.extra.get("memory_gib", {})
    where = f"{name} not run (qlora {s.qlora}, rank {s.lora_rank}, MLP width {cfg.intermediate_size})"
    if result.not_run is None or (result.reps, result.warmup) != (0, 0):
        differing.append(f"{where}: not_run {result.not_run!r}, reps {result.reps}, warmup {result.warmup}")
    if memory.get("parameters") != float(meta.num_parameters()):
        differing.append(
            f"{where}: {memory.get('parameters')} parameters, width {width} on meta has {meta.num_parameters()}"
        )
    if name in LORA_BRICKS:
        est = estimate(
            meta,
            "qlora" if s.qlora else "lora",
            base_dtype=torch.float32,
            lora=LoraSettings(r=s.lora_rank, alpha=2 * s.lora_rank),
        )
        want = {"weights": (est.base_weight_bytes + est.trainable_weight_bytes) / GIB}
        if name != "lora_forward":
            want["gradients_and_adamw"] = (est.gradient_bytes + est.optimizer_bytes) / GIB
        for part, value in want.items():
            if memory.get(part) != value:
                differing.append(f"{where}: {part} {memory.get(part)} GiB, the estimate's {value}")
    if result.extra.get("preset") != (s.preset if s.config is None else "checkpoint"):
        differing.append(f"{where}: preset {result.extra.get('preset')!r}")
    return float(memory.get("total", math.nan))


def _helpers_differing() -> list[str]:
    """cv_of and summarize at their edges; reference_workload without a device."""

    differing = []
    for times, want in (
        ([0.5], 0.0),
        ([0.0, 0.0], 0.0),
        ([0.25, 0.75], _cv([0.25, 0.75])),
        ([1.0, 2.0, 4.0], _cv([1.0, 2.0, 4.0])),
    ):
        got = cv_of(times)
        if not math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0):
            differing.append(f"cv_of({times}) = {got}, stdev/mean (0 for one time or a zero mean) = {want}")
    plain = summarize("x", [0.5, 0.25], 1)
    if (plain.calls_per_rep, plain.rate, plain.reps, plain.warmup) != (1, None, 2, 1):
        differing.append(f"summarize's defaults: calls_per_rep {plain.calls_per_rep}, rate {plain.rate}")
    zero = summarize("x", [0.0, 0.0], 0, 5.0, "tokens/s")
    if zero.rate is not None:
        differing.append(f"a zero median gave rate {zero.rate}, documented none")
    if not torch.equal(
        torch.as_tensor(reference_workload()()), torch.as_tensor(reference_workload(torch.device("cpu"))())
    ):
        differing.append("reference_workload() without a device is not the CPU's")
    return differing


@checker(
    observes=[
        "runs",
        "timed_calls",
        "decode_requests",
        "forwards",
        "not_run",
        "differing",
        "cases_differing",
        "run_all",
        "refusals",
        "refusals_differing",
        "refused",
    ],
    ids=["FALSIFY-BENCH-010"],
)
def bricks_run_what_they_name() -> dict[str, Any]:
    """Every brick under the recording timer, with two settings; every brick over a limit of 0 and
    by the default limit; a brick at exactly its limit; run_bricks' default; two refusals."""

    differing: list[str] = []
    base = BrickSettings(
        batch_size=2,
        seq_len=6,
        new_tokens=3,
        batch_sizes=(1, 3),
        warmup=1,
        reps=3,
        min_rep_s=0.0123,
        lora_rank=4,
        seed=5,
    )
    given = replace(
        base, seed=6, reference=True, lora_rank=2, config=preset("tiny").replace(intermediate_size=128, vocab_size=300)
    )
    counts = {"timed": 0, "generated": 0, "forwards": 0}
    runs = 0
    for s in (base, given):
        for name in BRICKS:
            for key, n in _timed_run(name, s, differing).items():
                counts[key] += n
            runs += 1

    not_run = 0
    widths = (176, 191, 4000, 128)  # the preset's, one under a multiple of 64, one far from it, a multiple
    for width in widths:
        cfg = preset("tiny").replace(intermediate_size=width)
        for name in BRICKS:
            for qlora in (False, True):
                _not_run(name, replace(base, config=cfg, qlora=qlora, max_memory_gib=0.0), differing)
                not_run += 1
    _not_run("optimizer", replace(base, max_memory_gib=0.0), differing)  # the preset named, not a config
    not_run += 1

    # the default limit: 80% of the available memory, read on either side
    huge = preset("tiny").replace(
        hidden_size=16384, num_attention_heads=32, num_key_value_heads=8, num_hidden_layers=64, intermediate_size=65536
    )
    before = psutil.virtual_memory().available / GIB
    result = run_brick("lora_forward", replace(base, config=huge))
    after = psutil.virtual_memory().available / GIB
    limit = result.extra.get("max_memory_gib", math.nan)
    if result.not_run is None or not 0.8 * min(before, after) * 0.99 <= limit <= 0.8 * max(before, after) * 1.01:
        differing.append(
            f"default limit {limit} GiB, 80% of the available {before:.2f}..{after:.2f} GiB (not run: {result.not_run})"
        )
    not_run += 1

    # exactly at its limit, a brick runs
    total = _not_run("lora_forward", replace(base, max_memory_gib=0.0), differing)
    rec = Recorder()
    with rec.installed():
        at_limit = run_brick("lora_forward", replace(base, max_memory_gib=total))
    if at_limit.not_run is not None:
        differing.append(f"a brick needing exactly its limit ({total} GiB) was not run: {at_limit.not_run}")

    with Recorder().installed():
        all_names = [r.name for r in run_bricks(None, base)]
    run_all = all_names == list(BRICKS) and ", ".join(BRICKS) == KNOWN
    differing += _helpers_differing()

    refused = refusals_differing(
        [
            (lambda: run_brick("matmul", base), ValueError, f"unknown brick 'matmul'; known: {KNOWN}"),
            (
                lambda: run_brick("loss", replace(base, threads=-1)),
                ValueError,
                "threads must be >= 0 (0: torch's default)",
            ),
        ]
    )
    return {
        "runs": runs,
        "timed_calls": counts["timed"],
        "decode_requests": counts["generated"],
        "forwards": counts["forwards"],
        "not_run": not_run,
        "differing": differing,
        "cases_differing": len(differing),
        "run_all": run_all,
        "refusals": 2,
        "refusals_differing": len(refused),
        "refused": refused,
    }
