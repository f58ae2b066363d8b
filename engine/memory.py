"""Training memory: analytic bytes for weights, gradients and optimizer state, and measurements.

The analytic side reads layer shapes off a model (build it on ``meta`` for real-size presets:
nothing is allocated) and counts bytes per storage format: fp32/fp16/bf16 at 4/2/2 bytes, NF4 at
half a byte per value plus its block constants (one fp32 absmax per 64 values; with double
quantization an 8-bit absmax per block, one fp32 absmax per 256 blocks, a 256-entry fp32 code
book and an fp32 offset per layer: exactly what bitsandbytes stores).  AdamW keeps two moments
per trainable parameter in that parameter's dtype (torch's behaviour).

The measured side runs real training steps: process RSS growth on CPU (after >= 2 steps so the
optimizer state exists), ``torch.cuda.max_memory_allocated`` on CUDA.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import psutil
import torch
from torch import nn

from engine.config import ModelConfig, preset
from engine.faults import FAULTS
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.model import build_model
from engine.quant import NF4_BLOCKSIZE

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Method = Literal["full", "lora", "qlora"]

BYTES_PER_VALUE: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2}
ADAMW_STATES = 2  # exp_avg and exp_avg_sq
DQ_BLOCKSIZE = 256  # bitsandbytes quantizes the absmax constants in blocks of 256
DQ_CODE_ENTRIES = 256
NF4_CODE_ENTRIES = 16  # every NF4 layer's quant state holds its own fp32 copy of the 16 NF4 levels


def dtype_name(dtype: torch.dtype) -> str:
    names = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
    try:
        return names[dtype]
    except KeyError:
        raise ValueError(f"no byte size for {dtype}; known: fp32, fp16, bf16") from None


def nf4_bytes(numel: int, blocksize: int = NF4_BLOCKSIZE, double_quant: bool = False) -> int:
    """Bytes bitsandbytes holds for one NF4 tensor of ``numel`` values."""
    blocks = math.ceil(numel / blocksize)
    codes = math.ceil(numel / 2)
    levels = NF4_CODE_ENTRIES * 4
    if not double_quant:
        return codes + blocks * 4 + levels
    return codes + blocks + math.ceil(blocks / DQ_BLOCKSIZE) * 4 + DQ_CODE_ENTRIES * 4 + 4 + levels


@dataclass(frozen=True)
class LinearShape:
    name: str
    out_features: int
    in_features: int
    bias: bool


def linear_shapes(model: nn.Module) -> list[LinearShape]:
    """Every ``nn.Linear`` of a bare engine model (build on ``meta`` for big presets)."""
    return [
        LinearShape(name, m.out_features, m.in_features, m.bias is not None)
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear)
    ]


def _unique_params(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    if FAULTS.active("memory_tied_weights_counted_twice"):  # the defect: a tied head counted again
        return list(model.named_parameters(remove_duplicate=False))  # pragma: no mutate
    seen: set[int] = set()
    out = []
    for name, p in model.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


def lora_param_count(model: nn.Module, settings: LoraSettings) -> int:
    """What PEFT really creates: r·(in + out) per targeted linear (v_proj is narrower under GQA)."""
    return sum(
        settings.r * (s.in_features + s.out_features)
        for s in linear_shapes(model)
        if s.name.rsplit(".", 1)[-1] in settings.targets
    )


def lora_param_count_square(config: ModelConfig, settings: LoraSettings) -> int:
    """The common back-of-envelope formula: layers · targets · r · hidden · 2.

    It assumes every target is hidden×hidden, which under grouped-query attention is false for
    k_proj/v_proj (their output is kv_heads·head_dim wide) and for the MLP projections.
    """
    return config.num_hidden_layers * len(settings.targets) * settings.r * config.hidden_size * 2


class TrainingBytes:
    """A method's training memory in four parts and their sum, as an estimate and a measurement
    (:class:`engine.checkpoint_memory.CheckpointMemory`) both report it."""

    base_weight_bytes: int
    trainable_weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.base_weight_bytes + self.trainable_weight_bytes + self.gradient_bytes + self.optimizer_bytes

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(cast("DataclassInstance", self)), "total_bytes": self.total_bytes}


@dataclass(frozen=True)
class MemoryEstimate(TrainingBytes):
    label: str
    method: Method
    base_storage: str
    base_weight_bytes: int
    trainable_params: int
    trainable_weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int


def estimate(
    model: nn.Module,
    method: Method,
    *,
    base_dtype: torch.dtype = torch.float16,
    lora: LoraSettings | None = None,
    nf4_blocksize: int = NF4_BLOCKSIZE,
    double_quant: bool = True,
    skip: Sequence[str] = ("lm_head",),
    label: str | None = None,
) -> MemoryEstimate:
    """Analytic training memory of ``model`` (a bare engine model, any device incl. ``meta``).

    ``full``: every parameter trains in ``base_dtype``.  ``lora``: frozen ``base_dtype`` base +
    fp32 LoRA.  ``qlora``: every linear except ``skip`` in NF4 (bias kept fp32, as bitsandbytes
    computes in fp32), the rest in ``base_dtype``, + fp32 LoRA.
    """
    base = dtype_name(base_dtype)
    params = _unique_params(model)
    if method == "full":
        n = sum(p.numel() for _, p in params)
        weights = n * BYTES_PER_VALUE[base]
        return MemoryEstimate(label or f"full {base}", method, base, 0, n, weights, weights, ADAMW_STATES * weights)
    settings = lora or LoraSettings()
    base_bytes = 0
    nf4_weights: set[str] = set()
    nf4_biases: set[str] = set()
    if method == "qlora":
        for s in linear_shapes(model):
            if s.name.rsplit(".", 1)[-1] in skip:
                continue
            nf4_weights.add(s.name + ".weight")
            base_bytes += nf4_bytes(s.out_features * s.in_features, nf4_blocksize, double_quant)
            if s.bias:
                nf4_biases.add(s.name + ".bias")
                base_bytes += s.out_features * 4
    for name, p in params:
        if name not in nf4_weights and name not in nf4_biases:
            base_bytes += p.numel() * BYTES_PER_VALUE[base]
    n_lora = lora_param_count(model, settings)
    lora_bytes = n_lora * 4
    moments = ADAMW_STATES
    if FAULTS.active("memory_estimate_one_adam_moment"):
        moments = 1  # pragma: no mutate
    storage = "nf4" if method == "qlora" else base
    return MemoryEstimate(
        label or f"{method} on {storage} base",
        method,
        storage,
        base_bytes,
        n_lora,
        lora_bytes,
        lora_bytes,
        moments * lora_bytes,
    )


def compare_lora_qlora(
    config: ModelConfig, lora: LoraSettings | None = None, *, double_quant: bool = True
) -> list[MemoryEstimate]:
    """fp16-base LoRA next to NF4-base QLoRA for ``config`` (built on ``meta``)."""
    model = build_model(config, device="meta")
    return [
        estimate(model, "lora", base_dtype=torch.float16, lora=lora, label="LoRA, fp16 base"),
        estimate(
            model,
            "qlora",
            base_dtype=torch.float16,
            lora=lora,
            double_quant=double_quant,
            label="QLoRA, NF4 base" + (" + DQ" if double_quant else ""),
        ),
    ]


def seven_b_report(r: int) -> dict[str, Any]:
    """The formulas on the Qwen2.5-7B shape: LoRA counts (assumed vs real) and the memory table."""
    config = preset("qwen2.5-7b")
    settings = LoraSettings(r=r, targets=("q_proj", "v_proj"))  # alpha enters no count or byte
    model = build_model(config, device="meta")
    rows = compare_lora_qlora(config, settings)
    return {
        "preset": "qwen2.5-7b",
        "rank": r,
        "targets": list(settings.targets),
        "lora_params_square_formula": lora_param_count_square(config, settings),
        "lora_params_real": lora_param_count(model, settings),
        "base_params": sum(p.numel() for _, p in _unique_params(model)),
        "rows": [row.to_dict() for row in rows],
    }


def format_bytes(n: float) -> str:
    step = 1024
    if FAULTS.active("memory_table_decimal_units"):  # the defect: kB-style steps under KiB-style names
        step = 1000  # pragma: no mutate
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < step or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= step
    return f"{n:.2f} GiB"


def memory_table(rows: Iterable[MemoryEstimate], measured: dict[str, int] | None = None) -> str:
    """A plain-text table; ``measured`` maps a row label to measured bytes."""
    head = ["setup", "base weights", "trainable", "grads", "AdamW state", "total"]
    if measured is not None:
        head.append("measured")
    lines = []
    for r in rows:
        cells = [
            r.label,
            format_bytes(r.base_weight_bytes),
            f"{format_bytes(r.trainable_weight_bytes)} ({r.trainable_params:,} p)",
            format_bytes(r.gradient_bytes),
            format_bytes(r.optimizer_bytes),
            format_bytes(r.total_bytes),
        ]
        if measured is not None:
            cells.append(format_bytes(measured[r.label]) if r.label in measured else "-")
        lines.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out.extend(fmt.format(*cells) for cells in lines)
    return "\n".join(out)


@dataclass(frozen=True)
class MeasuredMemory:
    device: str
    model_bytes: int  # growth while building the model (CPU RSS) / allocated after build (CUDA)
    training_bytes: int  # growth over the training steps (CPU RSS) / peak minus model (CUDA)
    peak_bytes: int  # RSS after the steps (CPU) / max_memory_allocated (CUDA)
    steps: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _release_freed_memory() -> None:
    """Hand freed heap pages back to the OS so RSS counts live memory, not the allocator's cache."""
    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: RSS then over-counts, never under-counts
        pass


def _rss() -> int:
    _release_freed_memory()
    return int(psutil.Process().memory_info().rss)


def measure_training(
    build: Callable[[], nn.Module],
    batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    *,
    steps: int = 2,
    device: torch.device | str = "cpu",
    lr: float = 1e-4,
) -> MeasuredMemory:
    """Build a model, run ``steps`` AdamW steps and report memory growth (``steps`` >= 2).

    ``build`` returns a model whose trainable parameters are the ones to train; ``batch``
    returns ``(input_ids, labels)`` on ``device``.
    """
    if steps < 2:
        raise ValueError("measure at least 2 steps: the optimizer state only exists after the first")
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        start = torch.cuda.memory_allocated(dev)
    else:
        start = _rss()
    model = build()
    after_build = torch.cuda.memory_allocated(dev) if cuda else _rss()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    if FAULTS.active("measured_model_lr_ignored"):  # pragma: no mutate
        opt = torch.optim.AdamW(params)  # pragma: no mutate -- the defect: torch's own rate, not lr
    model.train()
    for _ in range(steps):
        ids, labels = batch()
        loss = model(ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # keep the gradient buffers: they are part of the footprint
    if cuda:
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev)
        if FAULTS.active("gpu_training_counts_the_model"):  # pragma: no mutate
            # the defect: the model's own allocation counted as training's  # pragma: no mutate
            return MeasuredMemory(str(dev), after_build - start, peak - start, peak, steps)  # pragma: no mutate
        return MeasuredMemory(str(dev), after_build - start, peak - after_build, peak, steps)
    end = _rss()
    training = end - after_build
    if FAULTS.active("memory_training_counts_the_model"):
        training = end - start  # the defect: the model's own memory counted as training's  # pragma: no mutate
    return MeasuredMemory("cpu", after_build - start, training, end, steps)


def _method_model(
    config: ModelConfig, method: Method, lora: LoraSettings, device: str, seed: int, base_dtype: torch.dtype
) -> nn.Module:
    torch.manual_seed(seed)
    model = build_model(config, device=device, dtype=torch.float32)
    if method == "full":
        return model.to(base_dtype)
    if method == "lora":
        return apply_lora(model.to(base_dtype), lora)
    return prepare_qlora(model, lora, device=device)


_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _warm_up(method: Method, lora: LoraSettings, device: str, base_dtype: torch.dtype) -> None:
    """One throwaway run on a tiny model: the runtime's one-time allocations (thread pools, kernel
    caches, bitsandbytes' code books) then do not land in the measured step."""
    tiny = preset("tiny", intermediate_size=192)
    ids = torch.randint(0, tiny.vocab_size, (1, 8)).to(device)
    measure_training(
        lambda: _method_model(tiny, method, lora, device, 0, base_dtype), lambda: (ids, ids), steps=2, device=device
    )


def _measure_worker(request: dict[str, Any]) -> MeasuredMemory:
    cfg = ModelConfig.from_dict(request["config"])
    lora = LoraSettings(**{**request["lora"], "targets": tuple(request["lora"]["targets"])})
    device, seed = request["device"], request["seed"]
    gen = torch.Generator().manual_seed(seed)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, cfg.vocab_size, (request["batch_size"], request["seq_len"]), generator=gen).to(device)
        return ids, ids

    base_dtype = _DTYPES[request["base_dtype"]]
    if FAULTS.active("measured_base_always_fp32"):  # the defect: the base is measured in fp32 whatever was asked
        base_dtype = torch.float32  # pragma: no mutate

    def build() -> nn.Module:
        return _method_model(cfg, request["method"], lora, device, seed, base_dtype)

    _warm_up(request["method"], lora, device, base_dtype)
    return measure_training(build, batch, steps=request["steps"], device=device)


def _child_main() -> None:
    """Entry point of the fresh interpreter ``measure_method`` starts: JSON in, JSON out."""
    result = _measure_worker(json.loads(sys.stdin.read()))
    sys.stdout.write(RESULT_MARK + json.dumps(result.to_dict()) + "\n")


RESULT_MARK = "PV_MEMORY_RESULT "


def measure_method(
    config: ModelConfig,
    method: Method,
    *,
    lora: LoraSettings | None = None,
    steps: int = 2,
    batch_size: int = 2,
    seq_len: int = 32,
    device: str = "cpu",
    seed: int = 0,
    base_dtype: torch.dtype = torch.float16,
    fresh_process: bool = False,
) -> MeasuredMemory:
    """Measure one fine-tuning method on ``config``.

    On CPU the reading is RSS growth with freed heap pages handed back first (``malloc_trim``) and
    after a warm-up run, so one-time runtime allocations are not counted; ``fresh_process`` runs
    it in a new interpreter for a clean slate.  ``base_dtype``
    is the dtype of the full/LoRA base (QLoRA's base is NF4 whatever it says).
    """
    request = {
        "config": config.to_dict(),
        "method": method,
        "lora": asdict(lora or LoraSettings()),
        "steps": steps,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "device": device,
        "seed": seed,
        "base_dtype": dtype_name(base_dtype),
    }
    if not fresh_process:
        return _measure_worker(request)
    proc = subprocess.run(
        [sys.executable, "-c", "from engine.memory import _child_main; _child_main()"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:  # the child prints its result line last, so exit 0 means it printed one
        raise RuntimeError(f"memory measurement child failed (exit {proc.returncode}): {proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    return MeasuredMemory(**json.loads(lines[-1][len(RESULT_MARK) :]))


def live_tensor_storages() -> dict[tuple[str, int], int]:
    """Every tensor storage the garbage collector can reach: (device, address) -> bytes.

    Parameters, gradients, optimizer state, buffers and quantization constants are all tensors a
    Python object holds, so this counts what a training run keeps, exactly and identically on
    every run, whatever else the machine is doing (unlike RSS, which moves with the allocator's
    cache and the neighbours)."""
    gc.collect()
    out: dict[tuple[str, int], int] = {}
    for obj in gc.get_objects():
        if not isinstance(obj, torch.Tensor) or obj.is_meta:
            continue
        try:
            storage = obj.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse or wrapper tensors own no plain storage
            continue
        key = (str(storage.device), storage.data_ptr())
        out[key] = max(out.get(key, 0), storage.nbytes())
    return out


@dataclass(frozen=True)
class TensorFootprint:
    """Bytes of the tensor storages a run left alive, by what holds them (every byte counted once)."""

    model_bytes: int  # storages that appeared while building the model
    training_bytes: int  # storages that appeared over the training steps (gradients, optimizer state)
    steps: int

    @property
    def total_bytes(self) -> int:
        return self.model_bytes + self.training_bytes


def tensor_footprint(
    config: ModelConfig,
    method: Method,
    *,
    lora: LoraSettings | None = None,
    steps: int = 2,
    batch_size: int = 2,
    seq_len: int = 32,
    seed: int = 0,
    base_dtype: torch.dtype = torch.float16,
) -> TensorFootprint:
    """Build ``method``'s model on the CPU and train ``steps`` steps, counting the tensor storages
    that appear (:func:`live_tensor_storages`): deterministic for a given seed, so a comparison of
    two methods has no noise to be inconclusive about."""
    settings = lora or LoraSettings()
    _warm_up(method, settings, "cpu", base_dtype)  # lazily built caches (code books) are not the run's
    gen = torch.Generator().manual_seed(seed)
    before = live_tensor_storages()
    model = _method_model(config, method, settings, "cpu", seed, base_dtype)
    built = live_tensor_storages()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()
    for _ in range(steps):
        ids = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=gen)
        model(ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # keep the gradient buffers: they are part of the footprint
        if FAULTS.active("footprint_gradients_freed"):  # the defect: the gradients freed before the count
            opt.zero_grad(set_to_none=True)  # pragma: no mutate
    del ids
    after = live_tensor_storages()
    model_bytes = sum(n for k, n in built.items() if k not in before and k in after)
    training_bytes = sum(n for k, n in after.items() if k not in built)
    return TensorFootprint(model_bytes, training_bytes, steps)
