"""A multi-adapter run stops before the update when an adapter's gradient, not its loss, turns
non-finite.

FALSIFY-MULTI-007 diverges adapters until their loss is NaN.  A loss can stay finite while the
gradient overflows, and ``engine.multi_adapter`` checks each adapter's gradient norm for that as
a one-adapter run does (FALSIFY-PINIT-016).  Here a module on the base passes its output through
unchanged and makes the gradient flowing back through it infinite at one chosen training step, so
the loss is untouched.  The exception, its message, the stopped adapter's log record, its weights
against the checkpoint kept, the gradients left held, the folders, the training state's file
metadata and each log's ``elapsed_s`` are read directly, with and without a checkpoint written
before the stop; a new run into the same folders starts its logs afresh; and the runs
``train_adapters`` cannot start are refused word for word.
"""

from __future__ import annotations

import itertools
import math
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from torch import nn

from engine.checkpoint import load_checkpoint
from engine.data import InstructionData
from engine.errors import NonFiniteLossError
from engine.lora import ADAPTER_WEIGHTS, LoraSettings
from engine.multi_adapter import AdapterJob, train_adapters
from engine.train import STATE_TENSORS, TrainConfig
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.training import _log
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NAMES = ("a", "b")


class _InfiniteBackward(torch.autograd.Function):
    """The identity forward; an infinite gradient backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return torch.full_like(grad, math.inf)


class BlowUpAt:
    """A forward hook that counts the training forwards (gradients on) and blows up the ``at``-th."""

    def __init__(self, at: int) -> None:
        self.at, self.calls = at, 0

    def __call__(self, module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor | None:
        if not torch.is_grad_enabled():  # validation
            return None
        self.calls += 1
        return _InfiniteBackward.apply(output) if self.calls - 1 == self.at else None


def _adapter_weights(base: nn.Module, name: str) -> dict[str, torch.Tensor]:
    """The adapter's matrices under the keys PEFT saves them with (the base was wrapped in place)."""
    return {
        "base_model.model." + n.replace(f".{name}.", "."): p.detach()
        for n, p in base.named_parameters()
        if ".lora_" in n and f".{name}." in n
    }


def _elapsed_as_documented(records: list[dict[str, Any]], wall: float) -> bool:
    """Seconds since the adapter's start, rounded to 4 decimals, rising with every step."""
    elapsed: list[Any] = [r.get("elapsed_s") for r in records if r.get("kind") == "train"]
    return (
        len(elapsed) > 1
        and all(isinstance(e, float) and 0 < e <= wall and e == round(e, 4) for e in elapsed)
        and all(a < b for a, b in itertools.pairwise(elapsed))
    )


@checker(
    observes=[
        "stop",
        "message_as_written",
        "last_record_as_written",
        "weights_differing_from_kept",
        "gradients_held",
        "folders",
        "elapsed_as_documented",
        "state_metadata",
        "unsaved_stop",
        "rerun_log_kinds",
        "refusals_differing",
    ],
    ids=["FALSIFY-MULTI-008"],
)
def gradient_blow_up_stops_adapters(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, steps: int, blow_up_at: int
) -> dict[str, Any]:
    """Two rank-4 adapters, round robin, a checkpoint every step, the ``blow_up_at``-th training
    forward given an infinite gradient; the same saving nothing into the same folders, blown up at
    the first forward; three runs that must be refused."""

    def run(at: int, save_every: int, out: Path) -> tuple[nn.Module, NonFiniteLossError | None, float]:
        base = load_checkpoint(pretrained_init, device="cpu").model
        base.model.norm.register_forward_hook(BlowUpAt(at))
        cfg = TrainConfig(steps=steps, batch_size=2, lr=1e-3, warmup_steps=0, save_every=save_every, seed=0)
        jobs = [AdapterJob(n, instruction_data, out / n, LoraSettings(r=4, alpha=8.0)) for n in NAMES]
        started = time.perf_counter()
        try:
            train_adapters(base, jobs, cfg)
        except NonFiniteLossError as exc:
            return base, exc, time.perf_counter() - started
        return base, None, time.perf_counter() - started

    out = fresh_dir(tmp_path, "multi-grad-stop-")
    base, exc, wall = run(blow_up_at, 1, out)
    stopped = NAMES[blow_up_at % len(NAMES)]  # round robin: a, b, a, b, ...
    step = blow_up_at // len(NAMES)
    kept = out / stopped / f"step-{step:06d}"
    value = "?" if exc is None else str(exc.value)
    result: dict[str, Any] = {
        "stop": None if exc is None else [exc.step, exc.what, math.isfinite(exc.value), exc.last_checkpoint == kept]
    }
    result["message_as_written"] = str(exc) == (
        f"step {step}: adapter {stopped!r} gradient norm is {value}; training stopped before the update "
        f"(last good checkpoint kept at {kept})"
    )
    result["last_record_as_written"] = value in ("inf", "nan") and _log(out / stopped / "log.jsonl")[-1] == {
        "kind": "nonfinite",
        "step": step,
        "what": "grad_norm",
        "value": value,
        "last_checkpoint": str(kept),
    }
    saved = load_file(str(kept / "adapter" / ADAPTER_WEIGHTS))
    now = _adapter_weights(base, stopped)
    result["weights_differing_from_kept"] = sorted(
        k for k in saved.keys() | now.keys() if k not in saved or k not in now or not torch.equal(saved[k], now[k])
    )
    result["gradients_held"] = sum(p.grad is not None for p in base.parameters())
    result["folders"] = sorted(f"{n}/{p.name}" for n in NAMES for p in (out / n).iterdir())
    result["elapsed_as_documented"] = all(_elapsed_as_documented(_log(out / n / "log.jsonl"), wall) for n in NAMES)

    with safe_open(str(kept / STATE_TENSORS), "pt") as f:
        result["state_metadata"] = sorted((f.metadata() or {}).items())

    # a new run into the same folders, saving nothing, blown up at a's first step: its logs start afresh
    _, unsaved, _ = run(0, 0, out)
    result["unsaved_stop"] = [
        unsaved is not None and unsaved.last_checkpoint is None,
        str(unsaved).endswith("(no checkpoint was written yet)"),
        _log(out / NAMES[0] / "log.jsonl")[-1].get("last_checkpoint", "absent") is None,
    ]
    result["rerun_log_kinds"] = [[r["kind"] for r in _log(out / n / "log.jsonl")] for n in NAMES]

    cfg = TrainConfig(steps=steps, batch_size=2)
    fresh = partial(load_checkpoint, pretrained_init, device="cpu")
    job = partial(AdapterJob, data=instruction_data, out_dir=fresh_dir(tmp_path, "multi-grad-refused-"))
    result["refusals_differing"] = refusals_differing(
        [
            (
                partial(train_adapters, fresh().model, [job("a")], cfg, schedule="fastest"),  # type: ignore[arg-type]
                ValueError,
                "unknown schedule 'fastest'; expected one of round_robin, synchronized, lowest_val_first",
            ),
            (partial(train_adapters, fresh().model, [], cfg), ValueError, "no adapters to train"),
            (
                partial(train_adapters, fresh().model, [job("a"), job("a")], cfg),
                ValueError,
                "adapter names must be unique: ['a', 'a']",
            ),
        ]
    )
    return result
