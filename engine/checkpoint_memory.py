"""Training memory of a real checkpoint, measured by category and set beside the formula.

For LoRA (on a base loaded in ``base_dtype``) and QLoRA (linears in NF4, the rest as loaded), one
fresh interpreter per method loads the checkpoint, prepares the model and runs AdamW steps, then
reports two readings:

* **tensor bytes by category** (exact, noise-free): the frozen base (every live tensor storage the
  model holds that does not train: NF4 codes and constants included), the trainable weights, their
  gradients and the optimizer state, each counted once;
* **resident memory** (``RSS`` growth from before the load, freed heap pages handed back first):
  what the operating system sees, which is where a base kept mapped from its file would show.

The formula is :func:`engine.memory.estimate` on the same architecture built on ``meta``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from engine.checkpoint import inspect_checkpoint, load_checkpoint
from engine.faults import FAULTS
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.memory import (
    _DTYPES,
    RESULT_MARK,
    MemoryEstimate,
    Method,
    TrainingBytes,
    _rss,
    _warm_up,
    dtype_name,
    estimate,
    live_tensor_storages,
)
from engine.model import build_model

CHILD = "from engine.checkpoint_memory import _child_main; _child_main()"


@dataclass(frozen=True)
class CheckpointMemory(TrainingBytes):
    """One method's measured bytes on one checkpoint (tensor bytes exact; RSS as the OS reports)."""

    method: Method
    base_storage: str
    base_weight_bytes: int
    trainable_params: int
    trainable_weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    rss_model_bytes: int  # RSS growth over load + prepare
    rss_total_bytes: int  # RSS growth over load + prepare + the training steps
    steps: int


def _storages(tensors: Sequence[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = max(seen.get(s.data_ptr(), 0), s.nbytes())
    return sum(seen.values())


def _prepare(path: Path, method: Method, lora: LoraSettings, base_dtype: torch.dtype) -> nn.Module:

    if method == "qlora":  # the base is read in full precision once, quantized, and that copy freed
        return prepare_qlora(load_checkpoint(path).model, lora, device="cpu")
    if method == "lora":
        return apply_lora(load_checkpoint(path, dtype=base_dtype).model, lora)
    raise ValueError(f"checkpoint memory is measured for lora and qlora, not {method!r}")


def measure(
    path: Path, method: Method, lora: LoraSettings, base_dtype: torch.dtype, steps: int, batch_size: int, seq_len: int
) -> CheckpointMemory:
    """Measure in this process (see :func:`measure_checkpoint` for a clean one)."""
    if steps < 2:
        raise ValueError("measure at least 2 steps: the optimizer state only exists after the first")
    _warm_up(method, lora, "cpu", base_dtype)
    rss0 = _rss()
    before = live_tensor_storages()
    model = _prepare(path, method, lora, base_dtype)
    rss_model = _rss() - rss0
    trainable = [p for p in model.parameters() if p.requires_grad]
    model_bytes = sum(n for k, n in live_tensor_storages().items() if k not in before)
    trainable_bytes = _storages(trainable)
    # AdamW's defaults and token ids of 0: learning rate and ids change values, not one allocation
    opt = torch.optim.AdamW(trainable)
    ids = torch.zeros((batch_size, seq_len), dtype=torch.long)
    model.train()
    for _ in range(steps):
        # no zero_grad: each backward adds into the gradient buffers, part of the footprint
        model(ids, labels=ids).loss.backward()
        opt.step()
    grads = _storages([p.grad for p in trainable if p.grad is not None])
    state = _storages([v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor) and v.dim()])
    return CheckpointMemory(
        method,
        "nf4" if method == "qlora" else dtype_name(base_dtype),
        model_bytes - trainable_bytes,
        sum(p.numel() for p in trainable),
        trainable_bytes,
        grads,
        state,
        rss_model,
        _rss() - rss0,
        steps,
    )


def _child_main() -> None:
    r = json.loads(sys.stdin.read())
    lora = LoraSettings(**{**r["lora"], "targets": tuple(r["lora"]["targets"])})
    base_dtype = _DTYPES[r["base_dtype"]]
    # the defect: the child loads the base in fp32
    if FAULTS.active("checkpoint_memory_child_ignores_dtype"):  # pragma: no mutate
        base_dtype = torch.float32  # pragma: no mutate
    result = measure(Path(r["path"]), r["method"], lora, base_dtype, r["steps"], r["batch_size"], r["seq_len"])
    sys.stdout.write(RESULT_MARK + json.dumps(result.to_dict()) + "\n")


def measure_checkpoint(
    path: str | Path,
    method: Method,
    *,
    lora: LoraSettings | None = None,
    base_dtype: torch.dtype = torch.float16,
    steps: int = 2,
    batch_size: int = 2,
    seq_len: int = 32,
    env: dict[str, str] | None = None,
) -> CheckpointMemory:
    """Measure ``method`` on the checkpoint at ``path`` in a fresh interpreter (``env`` replaces its
    environment: the way a planted fault reaches it)."""
    request = {
        "path": str(Path(path).resolve()),
        "method": method,
        "lora": asdict(lora or LoraSettings()),
        "base_dtype": dtype_name(base_dtype),
        "steps": steps,
        "batch_size": batch_size,
        "seq_len": seq_len,
    }
    # the child imports the engine as this process does: the package is installed (editable in
    # a checkout) and the child starts in the caller's working directory
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
    )
    if proc.returncode != 0:  # the child prints its result line last, so exit 0 means it printed one
        raise RuntimeError(f"memory measurement of {path} ({method}) failed (exit {proc.returncode}): {proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    data = json.loads(lines[-1][len(RESULT_MARK) :])
    data.pop("total_bytes")
    return CheckpointMemory(**data)


def formula(path: str | Path, method: Method, lora: LoraSettings, base_dtype: torch.dtype) -> MemoryEstimate:
    """:func:`engine.memory.estimate` for the checkpoint's architecture, stored as the engine stores
    it: LoRA's base in ``base_dtype``; QLoRA's linears (but the head) in NF4 with double
    quantization and everything else as loaded (float32)."""

    config = inspect_checkpoint(path)[0]
    model = build_model(config, device="meta")
    rest = torch.float32 if method == "qlora" else base_dtype
    return estimate(model, method, base_dtype=rest, lora=lora, double_quant=True)
