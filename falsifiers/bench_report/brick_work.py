"""What each bench brick actually computes, watched from outside while it is timed.

A brick's report says which work its times are for: a LoRA forward of ``batch x seq_len`` tokens,
an AdamW step over the LoRA weights, a training step, the first token of a batch, ``new_tokens``
decoded for each of several batch sizes.  A brick that timed other work (the bare model instead of
the adapted one, two tokens for the first, a decode that stops early, a batch of another size)
reports the same fields with the wrong meaning, and no report field shows it.

So every brick runs here under torch's own global hooks: a forward pre-hook on every module (the
token embedding sees each forward's ids, so its input shape is the forward's batch and length; a
PEFT ``LoraLayer`` or a bitsandbytes ``Linear4bit`` that runs shows the adapter and the 4-bit base
are in the path), an optimizer step pre-hook (which parameters each step updates), and a
``TorchFunctionMode`` (the loss brick's ``cross_entropy``).  The forwards each call makes, in
order, must be exactly the work written out below for the brick and the settings given.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from engine.bricks import BRICKS, BrickSettings, run_brick
from engine.config import preset
from falsifiers.bench_report.bench_report import bench_config
from falsifiers.shared.parameter_counts import lora_count
from pv.checkers import checker


@dataclass
class Watched:
    """What ran while a brick was measured."""

    forwards: list[tuple[int, ...]] = field(default_factory=list)  # ids shape per model forward, in order
    modes: set[tuple[bool, bool]] = field(default_factory=set)  # (training, grad enabled) per forward
    lora_calls: int = 0
    nf4_calls: int = 0
    steps: list[tuple[str, int, bool]] = field(default_factory=list)  # optimizer, values updated, all trainable
    losses: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)  # cross_entropy shapes


class _LossWatch(torch.overrides.TorchFunctionMode):
    def __init__(self, watched: Watched) -> None:
        super().__init__()
        self.watched = watched

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is torch.nn.functional.cross_entropy:
            self.watched.losses.append((tuple(args[0].shape), tuple(args[1].shape)))
        return func(*args, **(kwargs or {}))


@contextmanager
def watching() -> Iterator[Watched]:
    """Record every model forward, adapter and 4-bit layer call, optimizer step and loss in the block."""
    # references (bitsandbytes, PEFT): they load only in the checkers that use them
    from bitsandbytes.nn import Linear4bit
    from peft.tuners.lora import LoraLayer

    watched = Watched()

    def pre_forward(module: nn.Module, args: tuple[Any, ...]) -> None:
        if isinstance(module, nn.Embedding) and args:
            watched.forwards.append(tuple(args[0].shape))
            watched.modes.add((module.training, torch.is_grad_enabled()))
        elif isinstance(module, LoraLayer):
            watched.lora_calls += 1
        if isinstance(module, Linear4bit):
            watched.nf4_calls += 1

    def pre_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        watched.steps.append(
            (type(optimizer).__name__, sum(p.numel() for p in params), all(p.requires_grad for p in params))
        )

    forward_hook = nn.modules.module.register_module_forward_pre_hook(pre_forward)
    step_hook = register_optimizer_step_pre_hook(pre_step)
    try:
        with _LossWatch(watched):
            yield watched
    finally:
        forward_hook.remove()
        step_hook.remove()


def _decodes(forwards: list[tuple[int, ...]], batch: int, length: int, new: int) -> bool:
    """Whether ``forwards`` is whole decodes of ``new`` tokens for a ``batch x length`` prompt: the
    prompt's forward, then one forward of one token per row for each further token."""
    call = [(batch, length)] + [(batch, 1)] * (new - 1)
    return bool(forwards) and len(forwards) % len(call) == 0 and forwards == call * (len(forwards) // len(call))


@checker(
    observes=["bricks", "work_differing", "differing_bricks", "lora_steps", "nf4_bricks"],
    ids=["FALSIFY-BREP-004"],
)
def bricks_do_the_work_they_report(
    batch_size: int, seq_len: int, new_tokens: int, batch_sizes: list[int], rank: int
) -> dict[str, Any]:
    """Each brick of the tiny preset, LoRA bricks also with a 4-bit base, watched while measured."""

    cfg = bench_config(preset("tiny"))
    lora = lora_count(cfg, rank)
    b, n, t = batch_size, seq_len, new_tokens
    differing: list[str] = []
    out: dict[str, Any] = {"bricks": 0, "lora_steps": 0, "nf4_bricks": 0}
    runs = [(name, False) for name in BRICKS] + [(name, True) for name in ("lora_forward", "optimizer", "train_step")]
    for name, qlora in runs:
        s = BrickSettings(
            batch_size=b, seq_len=n, new_tokens=t, batch_sizes=tuple(batch_sizes), warmup=1, reps=2, min_rep_s=0.0,
            lora_rank=rank, qlora=qlora, max_memory_gib=64.0,
        )  # fmt: skip
        with watching() as w:
            result = run_brick(name, s)
        out["bricks"] += 1
        calls = result.warmup + result.reps * result.calls_per_rep  # no calibration at min_rep_s 0
        adapted = w.lora_calls > 0 and (w.nf4_calls > 0) == qlora
        out["nf4_bricks"] += w.nf4_calls > 0
        if name == "lora_forward":
            ok = w.forwards == [(b, n)] * calls and w.modes == {(False, False)} and adapted and not w.steps
        elif name == "optimizer":
            # one forward and backward to make the gradients, then the timed steps over the LoRA weights alone
            ok = w.forwards == [(b, n)] and adapted and w.steps == [("AdamW", lora, True)] * calls
            out["lora_steps"] += len(w.steps)
        elif name == "train_step":
            ok = w.forwards == [(b, n)] * calls and w.modes == {(True, True)} and adapted
            ok = ok and w.steps == [("AdamW", lora, True)] * calls
            out["lora_steps"] += len(w.steps)
        elif name == "loss":
            rows = b * (n - 1)  # each position but the last predicts the next token
            ok = not w.forwards and w.losses == [((rows, cfg.vocab_size), (rows,))] * calls
        elif name == "ttft":
            ok = w.forwards == [(b, n)] * calls and w.lora_calls == 0 and w.modes == {(False, False)}
        elif name == "throughput":
            ok = _decodes(w.forwards, b, n, t) and len(w.forwards) == calls * t and w.lora_calls == 0
        else:  # batch: every batch size decodes in turn, each timed on its own
            per = 1 + 2  # warm-up and repetitions at min_rep_s 0
            spans = [t * per] * len(batch_sizes)
            starts = [sum(spans[:i]) for i in range(len(spans))]
            ok = len(w.forwards) == sum(spans) and w.lora_calls == 0
            ok = ok and all(
                _decodes(w.forwards[start : start + span], size, n, t)
                for size, start, span in zip(batch_sizes, starts, spans, strict=True)
            )
        ok = ok and (name in ("optimizer", "train_step") or not w.steps)
        if not ok:
            differing.append(f"{name}{' (qlora)' if qlora else ''}")
    out["work_differing"] = len(differing)
    out["differing_bricks"] = differing
    return out
