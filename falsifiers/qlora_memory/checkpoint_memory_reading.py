"""A checkpoint memory reading says what was measured, in the process asked for, and refuses what
it cannot measure word for word.

FALSIFY-QMEM-004 holds the reading's byte categories to the formula and a fresh interpreter's
reading to the in-process one field for field; both go through ``engine.checkpoint_memory.measure``,
so a field both get wrong alike passes there.  Here each field is held to a value written out: the
method, the base's storage name, the steps run (the default included), LoRA's trainable parameter
count r(in + out) per targeted linear, and resident-memory growth as whole bytes no larger, either
way, than a tiny checkpoint can move.  ``env`` is the child's environment: a fault named there (the base left
trainable) must show in the child's reading, and not without it.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.checkpoint import make_manifest, save_checkpoint
from engine.checkpoint_memory import measure, measure_checkpoint
from engine.faults import FAULTS
from engine.lora import LoraSettings
from engine.model import build_model
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.faults import ENV_VAR

TARGETS = ("q_proj", "v_proj", "down_proj")
RSS_CEILING = 256 * 2**20  # a tiny checkpoint and two steps: a few MiB; the interpreter's own RSS is far above


def _lora_params(model: nn.Module, r: int) -> int:
    return sum(
        r * (m.in_features + m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in TARGETS
    )


def _fields(reading: Any) -> list[Any]:
    d = reading.to_dict()
    rss = [d["rss_model_bytes"], d["rss_total_bytes"]]
    return [
        d["method"],
        d["base_storage"],
        d["steps"],
        d["trainable_params"],
        # growth, not a total: in a process that freed memory before, a reading can even be below 0
        all(isinstance(v, int) and abs(v) < RSS_CEILING for v in rss),
    ]


@checker(
    observes=["fresh", "planted", "in_process", "lora_params", "all_params", "failed_child", "refusals_differing"],
    ids=["FALSIFY-QMEM-010"],
)
def checkpoint_memory_reading(
    tmp_path: Path, engine_tokenizer: Any, tiny_model_factory: Any, rank: int
) -> dict[str, Any]:
    """A tiny checkpoint measured for LoRA on an fp16 base in a fresh interpreter with the default
    steps, again with the base-left-trainable fault named in the child's environment, and for
    QLoRA in this process with 3 steps; a child given no checkpoint; two measurements that must be refused."""
    config_model = tiny_model_factory(0, intermediate_size=192)
    folder = fresh_dir(tmp_path, "ckpt-memory-")
    path = save_checkpoint(folder / "model.safetensors", config_model, engine_tokenizer, make_manifest(step=0))
    lora = LoraSettings(r=rank, alpha=2.0 * rank, targets=TARGETS)
    meta = build_model(config_model.config, device="meta")
    out: dict[str, Any] = {"lora_params": _lora_params(meta, rank)}
    out["all_params"] = out["lora_params"] + sum(p.numel() for p in meta.parameters())
    # the faults this run plants travel to the child as the real-model contract sends them
    planted = ",".join(FAULTS.active_names())
    fresh = measure_checkpoint(path, "lora", lora=lora, base_dtype=torch.float16, env={**os.environ, ENV_VAR: planted})
    out["fresh"] = _fields(fresh)
    unfrozen = ",".join(filter(None, (planted, "base_left_trainable")))
    out["planted"] = _fields(measure_checkpoint(path, "lora", lora=lora, env={**os.environ, ENV_VAR: unfrozen}))
    out["in_process"] = _fields(measure(path, "qlora", lora, torch.float32, steps=3, batch_size=2, seq_len=16))
    missing = folder / "missing.safetensors"
    try:
        measure_checkpoint(missing, "lora", lora=lora)
        out["failed_child"] = "no error"
    except RuntimeError as exc:  # the child's own error travels in the message
        head = f"memory measurement of {missing} (lora) failed (exit 1): "
        out["failed_child"] = str(exc).startswith(head) and "missing.safetensors" in str(exc)[len(head) :]
    out["refusals_differing"] = refusals_differing(
        [
            (
                partial(measure, path, "lora", lora, torch.float32, 1, 2, 16),
                ValueError,
                "measure at least 2 steps: the optimizer state only exists after the first",
            ),
            (
                partial(measure, path, "full", lora, torch.float32, 2, 2, 16),
                ValueError,
                "checkpoint memory is measured for lora and qlora, not 'full'",
            ),
        ]
    )
    return out
